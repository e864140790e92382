from __future__ import annotations

from django.urls import include, path

from reviews.views import agents, audit, compliance, dashboard, preview, queue, workspaces

urlpatterns = [
    path("home/", queue.home, name="home"),
    path("agents/", agents.agents, name="agents"),
    path("agents/<slug:slug>/", agents.agent_detail, name="agent"),
    path("agents/<slug:slug>/persona/", agents.agent_persona, name="agent-persona"),
    path("agents/<slug:slug>/tools/", agents.agent_tools, name="agent-tools"),
    path("agents/<slug:slug>/policies/", agents.agent_policies, name="agent-policies"),
    path("agents/<slug:slug>/consolidate/", agents.agent_consolidate, name="agent-consolidate"),
    path("agents/<slug:slug>/keys/", agents.agent_key_create, name="agent-key-create"),
    path("agents/<slug:slug>/keys/<int:key_id>/revoke/", agents.agent_key_revoke, name="agent-key-revoke"),
    path("agents/<slug:slug>/preview/", preview.context_preview, name="context-preview"),
    path("workspaces/<slug:slug>/settings/", workspaces.workspace_settings, name="workspace-settings"),
    path("audit/", audit.audit, name="audit"),
    path("dashboard/", dashboard.dashboard, name="dashboard"),
    path("compliance/", compliance.index, name="compliance"),
    path("compliance/export/", compliance.subject_export, name="compliance-export"),
    path("compliance/erasure/", compliance.subject_erasure, name="compliance-erasure"),
    path("compliance/retention/", compliance.retention_setting, name="compliance-retention"),
    path("", include("reviews.signin_urls")),
]
