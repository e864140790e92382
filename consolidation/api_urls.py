from __future__ import annotations

from django.urls import URLPattern, path

from consolidation import api

urlpatterns: list[URLPattern] = [
    path("agents/<slug:slug>/consolidate", api.ConsolidateView.as_view(), name="api-agent-consolidate"),
    path("consolidation-runs/<int:run_id>", api.RunDetailView.as_view(), name="api-consolidation-run"),
]
