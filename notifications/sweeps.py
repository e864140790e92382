"""Notifications' rows of the erasure sweep (memoryhub.services.sweep),
registered from NotificationsConfig.ready().

Deliveries carry no text (notifications.dispatch), but their `user` is a
stable HMAC of the reference: anyone holding the server's key could link
an erased user's deliveries to them. Erasure sets it to the erasure's
pseudonym, as every other row of the subject gets."""

from __future__ import annotations

from typing import Any

from django.db.models import Model, QuerySet

from memoryhub.services import sweep


def _deliveries(scope: sweep.Scope) -> QuerySet[Model]:
    from notifications.dispatch import user_pseudonym
    from notifications.models import WebhookDelivery

    return WebhookDelivery.objects.filter(webhook__workspace=scope.workspace,
                                          payload__user=user_pseudonym(scope.user_ref))


def _apply(row: sweep.Sweep, scope: sweep.Scope, rows: QuerySet[Any]) -> int:
    count = 0
    for delivery in rows.only("id", "payload"):
        # Not history-tracked: a plain UPDATE misses nothing.
        type(delivery).objects.filter(pk=delivery.pk).update(payload={**delivery.payload, "user": scope.alias})
        count += 1
    return count


def register() -> None:
    sweep.register(sweep.Sweep("notifications.WebhookDelivery", {"payload": sweep.PSEUDONYM}, _deliveries,
                               "webhook_deliveries", apply=_apply,
                               note="payload's `user`, an HMAC of the reference"))
    fixed = "written by notifications from ids, slugs and fixed sentences, never an end user's text"
    sweep.declare_subject_free("notifications.Webhook", {
        "url": "configuration staff set", "events": "event names from a fixed list", "secret": "a signing secret"})
    sweep.declare_subject_free("notifications.WebhookDelivery", {
        "event": "an event name from a fixed list", "status": "a value from a fixed list",
        "last_error": "an HTTP status or a connection error"})
    sweep.declare_subject_free("notifications.EmailNotice", {
        "kind": "a value from a fixed list", "subject": fixed, "body": fixed, "status": "a value from a fixed list",
        "error": "the mail server's error"})
