from __future__ import annotations

from django.urls import URLPattern

# The HTMX review console arrives with the "Review console" issue.
urlpatterns: list[URLPattern] = []
