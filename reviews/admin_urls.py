from __future__ import annotations

from django.urls import include, path

from reviews import admin_views, compliance_views

urlpatterns = [
    path("home/", admin_views.home, name="home"),
    path("agents/", admin_views.agents, name="agents"),
    path("agents/<slug:slug>/", admin_views.agent_detail, name="agent"),
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
