"""Notifications: webhooks (who may register them, where they may point,
how a delivery is signed, sent and retried), e-mail notices and each
person's e-mail settings. Entry points (staff REST, console, Celery tasks)
call these; each operation checks the actor's role itself.

A bank's webhook must not become a way into its own network: a delivery
goes only to a public address (checked after DNS resolution, and the
connection is made to the address that was checked, so a second DNS answer
cannot swap it), redirects are not followed, and private, loopback and
link-local addresses are refused unless DEBUG or
MEMORYHUB_WEBHOOK_ALLOW_PRIVATE is set (tests and a closed intranet).
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import logging
import secrets
import socket
import ssl
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from memoryhub import errors, services
from memoryhub.actors import Actor, staff_user, username_of
from memoryhub.models import Membership, Proposal, RiskLevel, Workspace
from memoryhub.services.access import ADMIN_ROLES, REVIEW_ROLES
from notifications import destinations, dispatch
from notifications.models import (
    EVENTS,
    PING,
    DeliveryStatus,
    EmailNotice,
    NoticeKind,
    NoticeStatus,
    NotificationPreference,
    Webhook,
    WebhookDelivery,
)

logger = logging.getLogger(__name__)

URL_MAX = 2000
SECRET_MIN = 16
SECRET_MAX = 256
DEFAULT_SLA_HOURS = 24
NOTICE_MAX_ATTEMPTS = 5


# --- settings ------------------------------------------------------------------------------


def max_attempts() -> int:
    return int(getattr(settings, "MEMORYHUB_WEBHOOK_MAX_ATTEMPTS", 6))


def backoff(attempts: int, retry_after: float | None = None) -> float:
    """Seconds before attempt `attempts + 1`: base × 2^(attempts-1), capped,
    never shorter than the receiver's Retry-After (itself capped)."""
    base = float(getattr(settings, "MEMORYHUB_WEBHOOK_BACKOFF_SECONDS", 30))
    cap = float(getattr(settings, "MEMORYHUB_WEBHOOK_BACKOFF_MAX_SECONDS", 3600))
    return min(cap, max(base * 2 ** max(attempts - 1, 0), float(retry_after or 0)))


def allow_private() -> bool:
    return bool(settings.DEBUG or getattr(settings, "MEMORYHUB_WEBHOOK_ALLOW_PRIVATE", False))


# --- webhooks: registration ----------------------------------------------------------------


def _refused(refusal: destinations.Refusal, host: str) -> errors.Invalid:
    return errors.Invalid(refusal.sentence(host), field="url", reason="private_address",
                          address=refusal.address, range=refusal.network)


def validate_url(url: object) -> str:
    if not isinstance(url, str) or not url.strip() or len(url) > URL_MAX or not url.isprintable():
        raise errors.Invalid(f"url must be an http or https URL of at most {URL_MAX} characters.", field="url")
    url = url.strip()
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise errors.Invalid("url is not a valid URL.", field="url") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise errors.Invalid("url must start with http:// or https:// and name a host.", field="url")
    if parts.username or parts.password:
        raise errors.Invalid("url must not carry a user name or password; sign with the secret instead.",
                             field="url")
    del port
    try:
        host = destinations.parse_host(parts.hostname)
    except destinations.HostError as exc:
        raise errors.Invalid(f"url's host is not one an HTTP client can reach: {exc}.", field="url",
                             reason="invalid_host") from exc
    # No DNS here: a name's answer can change after registration, so the
    # check that counts runs at every delivery, after resolution.
    refusal = None if allow_private() else destinations.check_host(host)
    if refusal is not None:
        raise _refused(refusal, parts.hostname)
    return url


def validate_events(events: object) -> list[str]:
    if not isinstance(events, list) or not events or not all(isinstance(e, str) for e in events):
        raise errors.Invalid(f"events must be a non-empty list of: {', '.join(EVENTS)}.", field="events")
    unknown = [e for e in events if e not in EVENTS]
    if unknown:
        raise errors.Invalid(f"Unknown event {unknown[0]!r}; events are: {', '.join(EVENTS)}.", field="events")
    return sorted(set(events), key=EVENTS.index)


def validate_secret(secret: object) -> str:
    if not isinstance(secret, str) or not SECRET_MIN <= len(secret) <= SECRET_MAX or not secret.isprintable():
        raise errors.Invalid(f"secret must be {SECRET_MIN} to {SECRET_MAX} printable characters.", field="secret")
    return secret


def admin_workspace_ids(actor: Actor | None) -> list[int]:
    ids = services.workspace_ids_for(actor, ADMIN_ROLES)
    if not ids:
        raise errors.PermissionDenied("Only a workspace admin may manage webhooks.")
    return ids


def admin_workspace(*, actor: Actor, slug: object = None) -> Workspace:
    """The workspace a webhook is for: the one named, or the only one where
    the actor is an admin."""
    workspaces = Workspace.objects.filter(pk__in=admin_workspace_ids(actor))
    if slug:
        found = workspaces.filter(slug=slug).first()
        if found is None:
            if Workspace.objects.filter(slug=slug, pk__in=services.workspace_ids_for(actor)).exists():
                raise errors.PermissionDenied("Only a workspace admin may manage webhooks.")
            raise errors.NotFound(f"There is no workspace {slug!r} where you are an admin.")
        return found
    found_all = list(workspaces[:2])
    if len(found_all) > 1:
        raise errors.Invalid("You are an admin in several workspaces; name one as `workspace`.", field="workspace")
    return found_all[0]


def create_webhook(*, actor: Actor, workspace: Workspace, url: object, events: object,
                   secret: object = None) -> tuple[Webhook, str | None]:
    """Register a webhook. Returns it with the secret when one was generated
    (shown once; a secret the caller chose is never echoed back)."""
    services.require_admin(user=actor, workspace=workspace.pk, action="manage webhooks")
    url = validate_url(url)
    events = validate_events(events)
    generated = None
    if secret is None or secret == "":
        generated = secrets.token_urlsafe(32)
        secret = generated
    secret = validate_secret(secret)
    with transaction.atomic():
        hook = Webhook.objects.create(workspace=workspace, url=url, events=events, secret=secret,
                                      created_by=services.access.user_or_none(actor))
        services.record_event(action="webhook.create", workspace=workspace, actor_user=actor, target=hook,
                              summary=f"Added webhook #{hook.pk} for {', '.join(events)}",
                              details={"url": url, "events": events})
    return hook, generated


def visible_webhooks(user: Actor | None) -> Any:
    """Webhooks of the workspaces where the user is an admin."""
    return (Webhook.objects.active().filter(workspace_id__in=services.workspace_ids_for(user, ADMIN_ROLES))
            .select_related("workspace", "created_by").order_by("created_at", "id"))


def get_webhook_for_user(user: Actor | None, pk: Any) -> Webhook:
    admin_workspace_ids(user)
    try:
        number = int(pk)
    except (TypeError, ValueError) as exc:
        raise errors.NotFound("There is no such webhook.") from exc
    hook = visible_webhooks(user).filter(pk=number).first() if 0 < number < 2**63 else None
    if hook is None:
        raise errors.NotFound("There is no such webhook in your workspaces.")
    return hook


def delete_webhook(*, actor: Actor, webhook_id: object) -> Webhook:
    hook = get_webhook_for_user(actor, webhook_id)
    services.require_admin(user=actor, workspace=hook.workspace_id, action="manage webhooks")
    with transaction.atomic():
        if Webhook.objects.filter(pk=hook.pk, deleted_at__isnull=True).update(deleted_at=timezone.now()):
            services.record_event(action="webhook.delete", workspace=hook.workspace, actor_user=actor, target=hook,
                                  summary=f"Deleted webhook #{hook.pk}", details={"url": hook.url})
            # Nothing more goes to a deleted webhook.
            WebhookDelivery.objects.filter(webhook=hook, status=DeliveryStatus.PENDING).update(
                status=DeliveryStatus.FAILED, last_error="The webhook was deleted.")
    hook.refresh_from_db(fields=["deleted_at"])
    return hook


def send_test(*, actor: Actor, webhook_id: object) -> WebhookDelivery:
    """A `ping` delivery, whatever the webhook subscribes to."""
    hook = get_webhook_for_user(actor, webhook_id)
    services.require_admin(user=actor, workspace=hook.workspace_id, action="manage webhooks")
    now = timezone.now()
    payload = {"event": PING, "occurred_at": now.isoformat(), "workspace": hook.workspace.slug, "agent": None,
               "user": None, "actor": f"user:{username_of(actor)}", "target": {"type": "webhook", "id": hook.pk},
               "data": {}, "console_path": None}
    with transaction.atomic():
        (delivery,) = dispatch.queue_deliveries(workspace_id=hook.workspace_id, event=PING, payload=payload,
                                                webhooks=[hook])
        services.record_event(action="webhook.test", workspace=hook.workspace, actor_user=actor, target=hook,
                              summary=f"Sent a test delivery to webhook #{hook.pk}")
    return delivery


def recent_deliveries(user: Actor | None, *, limit: int = 50) -> list[WebhookDelivery]:
    ids = services.workspace_ids_for(user, ADMIN_ROLES)
    return list(WebhookDelivery.objects.filter(webhook__workspace_id__in=ids).select_related("webhook")
                .order_by("-created_at", "-id")[:limit])


# --- webhooks: delivery --------------------------------------------------------------------


def signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def body_of(delivery: WebhookDelivery) -> bytes:
    payload = {**delivery.payload, "delivery": delivery.pk}
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str).encode()


class _PinnedHTTP(http.client.HTTPConnection):
    """Connects to the address that passed the check, not to a fresh DNS answer."""

    def __init__(self, host: str, port: int | None, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPS(http.client.HTTPSConnection):
    def __init__(self, host: str, port: int | None, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout, context=ssl.create_default_context())
        self._address = address

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        # The certificate is checked against the host name, as usual.
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Outcome:
    ok: bool
    transient: bool
    code: int | None = None
    error: str = ""
    retry_after: float | None = None


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None


def resolve(host: str, port: int) -> list[str] | Outcome:
    """The addresses a delivery may connect to, or why it may not: the host
    parsed as at registration (an address in any spelling needs no DNS),
    then every address DNS answers checked against the same table."""
    try:
        parsed = destinations.parse_host(host)
    except destinations.HostError as exc:
        return Outcome(ok=False, transient=False, error=f"The URL's host is not valid: {exc}.")
    if parsed.address is not None:
        addresses = [str(parsed.address)]
    else:
        refusal = None if allow_private() else destinations.check_name(parsed.text)
        if refusal is not None:
            return Outcome(ok=False, transient=False, error=refusal.sentence(host))
        try:
            infos = socket.getaddrinfo(parsed.text, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            return Outcome(ok=False, transient=True, error=f"DNS lookup failed: {exc}")
        addresses = [str(info[4][0]).split("%", 1)[0] for info in infos]
        if not addresses:
            return Outcome(ok=False, transient=True, error=f"DNS gave no address for {host}.")
    if not allow_private():
        for address in addresses:
            refusal = destinations.check_address(address)
            if refusal is not None:
                return Outcome(ok=False, transient=False, error=refusal.sentence(host))
    return addresses


def post(*, url: str, body: bytes, headers: dict[str, str]) -> Outcome:
    """One POST. 2xx is delivered; 429, 5xx and network errors are worth
    another try; any other answer (including a redirect, never followed) is not."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    timeout = float(getattr(settings, "MEMORYHUB_WEBHOOK_TIMEOUT_SECONDS", 10))
    resolved = resolve(host, port)
    if isinstance(resolved, Outcome):
        return resolved
    addresses = resolved
    cls = _PinnedHTTPS if parts.scheme == "https" else _PinnedHTTP
    conn = cls(host, port, addresses[0], timeout)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        conn.request("POST", path, body=body, headers=headers)
        response = conn.getresponse()
        response.read(65536)
        code = response.status
        retry_after = _retry_after(response.getheader("Retry-After"))
    except (OSError, http.client.HTTPException) as exc:
        return Outcome(ok=False, transient=True, error=f"{type(exc).__name__}: {exc}"[:500])
    finally:
        conn.close()
    if 200 <= code < 300:
        return Outcome(ok=True, transient=False, code=code)
    if code == 429 or code >= 500:
        return Outcome(ok=False, transient=True, code=code, error=f"The receiver answered HTTP {code}.",
                       retry_after=retry_after)
    return Outcome(ok=False, transient=False, code=code, error=f"The receiver answered HTTP {code}; not retried.")


@dataclass(frozen=True)
class Attempt:
    status: str
    attempts: int
    retry_in: float | None = None


def claim_delivery(*, delivery_id: int, now: datetime) -> int | None:
    """PENDING (and due) or SENDING with a lapsed lease → SENDING, for one
    caller; returns the attempt number it claimed, else None."""
    due = Q(status=DeliveryStatus.PENDING, next_attempt_at__lte=now + timedelta(seconds=1)) | Q(
        status=DeliveryStatus.SENDING, lease_expires_at__lt=now)
    lease = timedelta(seconds=float(getattr(settings, "MEMORYHUB_WEBHOOK_TIMEOUT_SECONDS", 10)) * 3 + 30)
    claimed = WebhookDelivery.objects.filter(due, pk=delivery_id, attempts__lt=max_attempts()).update(
        status=DeliveryStatus.SENDING, attempts=F("attempts") + 1, last_attempt_at=now,
        lease_expires_at=now + lease)
    if claimed != 1:
        return None
    return int(WebhookDelivery.objects.values_list("attempts", flat=True).get(pk=delivery_id))


def attempt_delivery(*, delivery_id: int, now: datetime | None = None) -> Attempt | None:
    """Send one delivery once. Returns what became of it (and when to try
    again), or None if it was not due or someone else holds it."""
    now = now or timezone.now()
    attempt = claim_delivery(delivery_id=delivery_id, now=now)
    if attempt is None:
        return None
    delivery = WebhookDelivery.objects.select_related("webhook").get(pk=delivery_id)
    hook = delivery.webhook
    if hook.deleted_at is not None:
        outcome = Outcome(ok=False, transient=False, error="The webhook was deleted.")
    else:
        body = body_of(delivery)
        outcome = post(url=hook.url, body=body, headers={
            "Content-Type": "application/json",
            "User-Agent": "MemoryHub-Webhook/1",
            "X-MemoryHub-Event": delivery.event,
            "X-MemoryHub-Delivery": str(delivery.pk),
            "X-MemoryHub-Signature": signature(hook.secret, body),
        })
    finished = timezone.now()
    fields: dict[str, Any] = {"response_code": outcome.code, "last_error": outcome.error, "lease_expires_at": None}
    retry_in = None
    if outcome.ok:
        fields.update(status=DeliveryStatus.SUCCEEDED, delivered_at=finished)
    elif outcome.transient and attempt < max_attempts():
        retry_in = backoff(attempt, outcome.retry_after)
        fields.update(status=DeliveryStatus.PENDING, next_attempt_at=finished + timedelta(seconds=retry_in))
    else:
        if outcome.transient:
            fields["last_error"] = f"Gave up after {attempt} attempts. {outcome.error}"
        fields.update(status=DeliveryStatus.FAILED)
    # Fenced: a sweep that took the delivery over after our lease ran out owns it now.
    WebhookDelivery.objects.filter(pk=delivery_id, status=DeliveryStatus.SENDING, attempts=attempt).update(**fields)
    return Attempt(status=fields["status"], attempts=attempt, retry_in=retry_in)


def due_deliveries(*, now: datetime | None = None, batch: int = 100) -> list[int]:
    """Deliveries whose message may have been lost: due for a while and not
    sent, or claimed by a worker whose lease ran out."""
    now = now or timezone.now()
    grace = timedelta(seconds=60)
    return list(WebhookDelivery.objects.filter(
        Q(status=DeliveryStatus.PENDING, next_attempt_at__lt=now - grace)
        | Q(status=DeliveryStatus.SENDING, lease_expires_at__lt=now)
    ).order_by("next_attempt_at").values_list("pk", flat=True)[:batch])


# --- e-mail --------------------------------------------------------------------------------


def is_high_risk(proposal: Any) -> bool:
    """A proposal reviewers are told about at once: the risk level computed
    on creation (memoryhub.risk) says high."""
    return bool(proposal.risk_level == RiskLevel.HIGH)


def sla_hours(workspace: Workspace) -> float:
    value = getattr(workspace, "sla_hours", None)
    return float(value) if value else float(DEFAULT_SLA_HOURS)


def preferences_for(user: Actor | None) -> NotificationPreference:
    member = staff_user(user)
    found = NotificationPreference.objects.filter(user=member).first()
    return found or NotificationPreference(user=member)


def update_preferences(*, user: Actor | None, high_risk: bool, overdue: bool,
                       run_failed: bool) -> NotificationPreference:
    """A person's own e-mail settings."""
    member = staff_user(user)
    if member is None:
        raise errors.PermissionDenied("Sign in to change your notification settings.")
    with transaction.atomic():
        pref, _ = NotificationPreference.objects.select_for_update().get_or_create(user=member)
        pref.high_risk, pref.overdue, pref.run_failed = bool(high_risk), bool(overdue), bool(run_failed)
        pref.updated_at = timezone.now()
        pref.save()
        services.record_event(action="notifications.settings", actor_user=user, target=pref,
                              summary="Changed own notification e-mails",
                              details={"high_risk": pref.high_risk, "overdue": pref.overdue,
                                       "run_failed": pref.run_failed})
    return pref


def recipients(*, workspace_id: int, kind: str) -> list[Any]:
    """Reviewers and admins of the workspace with an e-mail address who have
    not turned this kind of e-mail off."""
    user_ids = Membership.objects.filter(workspace_id=workspace_id, role__in=list(REVIEW_ROLES),
                                         user__is_active=True).exclude(user__email="").values("user_id")
    users = list(get_user_model().objects.filter(pk__in=user_ids).order_by("pk"))
    off = set(NotificationPreference.objects.filter(user__in=[u.pk for u in users], **{kind: False})
              .values_list("user_id", flat=True))
    return [u for u in users if u.pk not in off]


def _message(kind: str, obj: Any) -> tuple[str, str]:
    base = getattr(settings, "MEMORYHUB_CONSOLE_URL", "").rstrip("/")
    if kind == NoticeKind.RUN_FAILED:
        slug = obj.agent.slug
        return (f"[MemoryHub] Consolidation run #{obj.pk} for {slug} failed",
                f"Consolidation run #{obj.pk} for agent {slug} failed.\n\n"
                f"The reason is on the agent page: {base}/agents/{slug}/\n")
    what = f"proposal #{obj.pk} for {obj.agent.slug} / {obj.kind}"
    if kind == NoticeKind.OVERDUE:
        return (f"[MemoryHub] Overdue: {what}",
                f"{what[0].upper()}{what[1:]} has waited longer than the review SLA.\n\n"
                f"Review it: {base}/proposals/{obj.pk}/\n")
    return (f"[MemoryHub] High-risk {what}",
            f"A high-risk {what} awaits review.\n\nReview it: {base}/proposals/{obj.pk}/\n")


def queue_notices(*, kind: str, workspace: Workspace | None, objects: list[Any],
                  exclude_user_id: int | None = None) -> int:
    """Notices for each object to each recipient, once (the unique
    constraint drops repeats). Written in the caller's transaction."""
    if workspace is None or not objects:
        return 0
    people = [p for p in recipients(workspace_id=workspace.pk, kind=kind) if p.pk != exclude_user_id]
    if not people:
        return 0
    rows = []
    for obj in objects:
        subject, body = _message(kind, obj)
        rows += [EmailNotice(kind=kind, recipient=person, workspace=workspace, object_id=obj.pk, subject=subject,
                             body=body) for person in people]
    EmailNotice.objects.bulk_create(rows, ignore_conflicts=True)
    return len(rows)


def queue_overdue(*, now: datetime | None = None, batch: int = 200) -> int:
    """Pending proposals past their workspace's SLA, announced once each."""
    now = now or timezone.now()
    queued = 0
    for workspace in Workspace.objects.all():
        if not recipients(workspace_id=workspace.pk, kind=NoticeKind.OVERDUE):
            continue
        cutoff = now - timedelta(hours=sla_hours(workspace))
        announced = EmailNotice.objects.filter(kind=NoticeKind.OVERDUE, workspace=workspace).values("object_id")
        overdue = list(Proposal.objects.pending().filter(agent__workspace=workspace, created_at__lt=cutoff)
                       .exclude(pk__in=announced).select_related("agent").order_by("created_at", "id")[:batch])
        with transaction.atomic():
            queued += queue_notices(kind=NoticeKind.OVERDUE, workspace=workspace, objects=overdue)
    return queued


def send_pending_notices(*, batch: int = 100) -> int:
    """Send what is waiting, each notice by one sender (a conditional update)."""
    sent = 0
    pending = list(EmailNotice.objects.filter(status=NoticeStatus.PENDING).select_related("recipient")
                   .order_by("created_at", "id")[:batch])
    for notice in pending:
        if not EmailNotice.objects.filter(pk=notice.pk, status=NoticeStatus.PENDING).update(
                status=NoticeStatus.SENT, attempts=F("attempts") + 1, sent_at=timezone.now()):
            continue
        try:
            send_mail(notice.subject, notice.body, settings.DEFAULT_FROM_EMAIL, [notice.recipient.email])
        except Exception as exc:
            logger.warning("could not send notice %s: %s", notice.pk, exc)
            attempts = notice.attempts + 1
            EmailNotice.objects.filter(pk=notice.pk).update(
                status=NoticeStatus.FAILED if attempts >= NOTICE_MAX_ATTEMPTS else NoticeStatus.PENDING,
                error=f"{type(exc).__name__}: {exc}"[:500], sent_at=None)
        else:
            sent += 1
    return sent


@dataclass(frozen=True)
class SweepResult:
    redelivered: list[int]
    overdue: int
    emails: int


def sweep(*, now: datetime | None = None) -> SweepResult:
    """The periodic pass (beat): re-send deliveries whose message was lost,
    announce overdue proposals, send e-mails."""
    ids = due_deliveries(now=now)
    dispatch.send_soon(ids)
    overdue = queue_overdue(now=now)
    return SweepResult(redelivered=ids, overdue=overdue, emails=send_pending_notices())
