from __future__ import annotations

from django.urls import include, path

from reviews import admin_views, compliance_views

urlpatterns = [
    path("home/", admin_views.home, name="home"),
    path("agents/", admin_views.agents, name="agents"),
    path("agents/<slug:slug>/", admin_views.agent_detail, name="agent"),
    path("agents/<slug:slug>/persona/", admin_views.agent_persona, name="agent-persona"),
    path("agents/<slug:slug>/tools/", admin_views.agent_tools, name="agent-tools"),
    path("agents/<slug:slug>/policies/", admin_views.agent_policies, name="agent-policies"),
    path("agents/<slug:slug>/consolidate/", admin_views.agent_consolidate, name="agent-consolidate"),
    path("agents/<slug:slug>/keys/", admin_views.agent_key_create, name="agent-key-create"),
    path("agents/<slug:slug>/keys/<int:key_id>/revoke/", admin_views.agent_key_revoke, name="agent-key-revoke"),
    path("agents/<slug:slug>/preview/", admin_views.context_preview, name="context-preview"),
    path("workspaces/<slug:slug>/settings/", admin_views.workspace_settings, name="workspace-settings"),
    path("audit/", admin_views.audit, name="audit"),
    path("dashboard/", admin_views.dashboard, name="dashboard"),
    path("compliance/", compliance_views.index, name="compliance"),
    path("compliance/export/", compliance_views.subject_export, name="compliance-export"),
    path("compliance/erasure/", compliance_views.subject_erasure, name="compliance-erasure"),
    path("compliance/retention/", compliance_views.retention_setting, name="compliance-retention"),
    path("", include("reviews.signin_urls")),
]
