from __future__ import annotations

from django.urls import path

from notifications import views

urlpatterns = [
    path("webhooks/", views.webhooks, name="webhooks"),
    path("settings/notifications/", views.notification_settings, name="notification-settings"),
]
