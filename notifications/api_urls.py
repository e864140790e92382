from __future__ import annotations

from django.urls import path

from notifications import api

urlpatterns = [
    path("webhooks", api.WebhookListView.as_view(), name="api-webhooks"),
    path("webhooks/<int:webhook_id>", api.WebhookDetailView.as_view(), name="api-webhook"),
]
