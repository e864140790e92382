from __future__ import annotations

from django.urls import URLPattern

# Filled by the Dreaming issue: POST agents/<slug>/consolidate, GET consolidation-runs/<id>.
urlpatterns: list[URLPattern] = []
