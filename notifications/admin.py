"""Read-only Django-admin views of webhooks and what was sent. Webhooks are
added and deleted in the console (/webhooks/) or the API, which check the
role and the address; the secret is never shown here."""

from __future__ import annotations

from django.contrib import admin

from memoryhub.admin import ReadOnlyMixin
from notifications.models import EmailNotice, NotificationPreference, Webhook, WebhookDelivery


@admin.register(Webhook)
class WebhookAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("id", "workspace", "url", "created_at", "deleted_at")
    list_select_related = ("workspace",)
    exclude = ("secret",)


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("id", "webhook", "event", "status", "attempts", "response_code", "created_at")
    list_filter = ("status", "event")
    list_select_related = ("webhook",)


@admin.register(EmailNotice)
class EmailNoticeAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("id", "kind", "recipient", "object_id", "status", "created_at", "sent_at")
    list_filter = ("kind", "status")
    list_select_related = ("recipient",)


@admin.register(NotificationPreference)
class NotificationPreferenceAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("user", "high_risk", "overdue", "run_failed", "updated_at")
    list_select_related = ("user",)
