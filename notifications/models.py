"""Webhooks, their delivery log, e-mail notices and each person's choice of
e-mails.

A delivery and an e-mail notice are written in the transaction of the action
they announce (a transactional outbox): if the action rolls back, nothing is
announced; if the broker loses the message, the row is still there and the
periodic sweep sends it (notifications.services.sweep)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

# API.md, "Added in v1.1": the events a webhook may subscribe to. `ping` is
# sent by the console's "send test" button whatever the subscription.
EVENTS = (
    "proposal.created",
    "proposal.approved",
    "proposal.rejected",
    "proposal.stale",
    "file.withheld",
    "run.failed",
    "change.pending",
)
PING = "ping"


class WebhookQuerySet(models.QuerySet["Webhook"]):
    def active(self) -> WebhookQuerySet:
        return self.filter(deleted_at__isnull=True)


class Webhook(models.Model):
    workspace = models.ForeignKey("memoryhub.Workspace", on_delete=models.PROTECT, related_name="webhooks")
    url = models.CharField(max_length=2000)
    events = models.JSONField(default=list)
    # Kept to sign every delivery (HMAC needs the secret itself, not a hash);
    # shown once, to the person who set it, and never returned again.
    secret = models.CharField(max_length=256)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                   related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    # Deleting keeps the row, so its delivery log stays readable.
    deleted_at = models.DateTimeField(null=True, blank=True)

    objects = WebhookQuerySet.as_manager()

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["workspace", "deleted_at"], name="webhook_ws_deleted")]

    def __str__(self) -> str:
        return f"Webhook #{self.pk} {self.url}"

    def wants(self, event: str) -> bool:
        return event == PING or event in (self.events or [])


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    SENDING = "sending", "Sending"
    SUCCEEDED = "succeeded", "Delivered"
    FAILED = "failed", "Failed (gave up)"


class WebhookDelivery(models.Model):
    webhook = models.ForeignKey(Webhook, on_delete=models.PROTECT, related_name="deliveries")
    event = models.CharField(max_length=64)
    # Ids, names and states only: never memory content, log text or free-text
    # reasons (docs/operations.md, "Notifications").
    payload = models.JSONField(default=dict)
    status = models.CharField(max_length=16, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    response_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    # A claimed delivery's lease: a worker that died mid-request leaves it
    # SENDING, and the sweep takes it back after this.
    lease_expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "webhook deliveries"
        indexes = [
            models.Index(fields=["status", "next_attempt_at"], name="delivery_status_next"),
            models.Index(fields=["webhook", "created_at"], name="delivery_webhook_created"),
        ]

    def __str__(self) -> str:
        return f"Delivery #{self.pk} {self.event} → webhook {self.webhook_id} ({self.status})"


class NoticeKind(models.TextChoices):
    HIGH_RISK = "high_risk", "New high-risk proposal"
    OVERDUE = "overdue", "Proposal past its SLA"
    RUN_FAILED = "run_failed", "Consolidation run failed"


class NoticeStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    SENT = "sent", "Sent"
    FAILED = "failed", "Failed"


class EmailNotice(models.Model):
    """One e-mail to one person about one object; unique, so a proposal is
    announced as overdue once, however often the check runs."""

    kind = models.CharField(max_length=16, choices=NoticeKind.choices)
    recipient = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    workspace = models.ForeignKey("memoryhub.Workspace", on_delete=models.PROTECT, related_name="+")
    object_id = models.BigIntegerField()
    subject = models.CharField(max_length=200)
    body = models.TextField()
    status = models.CharField(max_length=16, choices=NoticeStatus.choices, default=NoticeStatus.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["kind", "object_id", "recipient"], name="notice_once_per_recipient"),
        ]
        indexes = [models.Index(fields=["status", "created_at"], name="notice_status_created")]

    def __str__(self) -> str:
        return f"{self.kind} #{self.object_id} → {self.recipient_id} ({self.status})"


class NotificationPreference(models.Model):
    """Which e-mails a person wants. No row means the defaults: everything
    on for reviewers and admins (auditors get none: they decide nothing)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.PROTECT,
                                related_name="notification_preference")
    high_risk = models.BooleanField(default=True)
    overdue = models.BooleanField(default=True)
    run_failed = models.BooleanField(default=True)
    updated_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"Notification settings of {self.user}"

    def wants(self, kind: str) -> bool:
        return bool(getattr(self, kind))
