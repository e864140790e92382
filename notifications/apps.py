from __future__ import annotations

from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    name = "notifications"
    verbose_name = "Notifications"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from memoryhub.services import audit
        from notifications import dispatch, sweeps

        # memoryhub imports no other app: the audit log announces each event
        # to listeners, and this app listens (dispatch.on_audit_event).
        audit.subscribe(dispatch.on_audit_event)
        sweeps.register()
