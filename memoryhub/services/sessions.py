"""Agent sessions and their append-only logs.

A session freezes the agent's context when it starts (keeps the model's
prompt cache valid), lives at most MEMORYHUB_SESSION_MAX_AGE_SECONDS, and
never serves content that was taken out of service after it started.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from memoryhub import context, errors, scanner
from memoryhub.models import Agent, AgentSession, LogEntry, LogRole
from memoryhub.services.access import _int_id
from memoryhub.services.audit import record_event
from memoryhub.services.limits import validate_content, validate_user_ref

MAX_LOG_ENTRY_CHARS = 20_000
MAX_LOG_BATCH = 200
MAX_LOG_REQUEST_CHARS = 200_000
EXTERNAL_ID_MAX = 255


def max_age() -> timedelta:
    return timedelta(seconds=settings.MEMORYHUB_SESSION_MAX_AGE_SECONDS)


def is_expired(session: AgentSession, now: datetime | None = None) -> bool:
    return bool(session.started_at + max_age() <= (now or timezone.now()))


def start_session(*, agent: Agent, user_ref: object, external_id: object = "") -> AgentSession:
    user_ref = validate_user_ref(user_ref)
    if not isinstance(external_id, str) or len(external_id) > EXTERNAL_ID_MAX or not external_id.isprintable():
        raise errors.Invalid("external_id must be at most 255 printable characters.", field="external_id")
    assembled = context.build_context(agent=agent, user_ref=user_ref)
    return AgentSession.objects.create(
        agent=agent,
        user_ref=user_ref,
        external_id=external_id,
        snapshot=assembled["snapshot"],
        context=context.public(assembled),
        parts=assembled["_parts"],
    )


def get_session(*, agent: Agent, session_id: object, user_ref: str | None = None) -> AgentSession:
    """One of this agent's sessions (and this user's, when given); another
    agent's session is indistinguishable from a missing one."""
    sessions = AgentSession.objects.filter(pk=_int_id(session_id, "session"), agent=agent)
    if user_ref is not None:
        sessions = sessions.filter(user_ref=validate_user_ref(user_ref))
    session = sessions.first()
    if session is None:
        raise errors.NotFound("There is no such session for this agent and user.")
    return session


def _require_live(session: AgentSession) -> None:
    if is_expired(session):
        raise errors.SessionExpired(
            f"Session #{session.pk} started more than {int(max_age().total_seconds()) // 3600} hours ago and has "
            "expired; start a new session.",
            field="session",
        )


def session_context(*, agent: Agent, session_id: object, user_ref: str) -> dict[str, object]:
    """The context frozen when the session started, minus whatever was taken
    out of service since (withheld or rolled back)."""
    session = get_session(agent=agent, session_id=session_id, user_ref=user_ref)
    _require_live(session)
    files = context.load_rows(agent=agent, user_ref=session.user_ref)
    payload = context.session_payload(agent=agent, user_ref=session.user_ref, frozen=session.context,
                                      parts=session.parts, files=files)
    return {**payload, "session": session.pk}


class LogBatch(list[LogEntry]):
    """The appended rows, and how many secrets were redacted from them."""

    redacted: int = 0
    redacted_rules: list[str]


def append_log(*, session: AgentSession, entries: object) -> LogBatch:
    """Append a batch to a session log. All or nothing; never an update."""
    if session.is_ended:
        raise errors.Invalid("This session has ended; start a new one to log more.", field="session")
    _require_live(session)
    if not isinstance(entries, list) or not entries:
        raise errors.Invalid("Send at least one log entry.", field="entries")
    if len(entries) > MAX_LOG_BATCH:
        raise errors.LimitExceeded(
            f"Send at most {MAX_LOG_BATCH} entries per request; this one has {len(entries)}.", limit=MAX_LOG_BATCH
        )
    rows = []
    total = 0
    redacted = 0
    rules: set[str] = set()
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise errors.Invalid(f"Entry {index} must be an object with role and content.", field="entries")
        role = entry.get("role")
        if role not in LogRole.values:
            raise errors.Invalid(
                f"Entry {index} has role {role!r}; use one of {', '.join(LogRole.values)}.", field="entries"
            )
        content = validate_content(entry.get("content"), field="entries")
        if not content.strip():
            raise errors.Invalid(f"Entry {index} has no content.", field="entries")
        if len(content) > MAX_LOG_ENTRY_CHARS:
            raise errors.LimitExceeded(
                f"Entry {index} has {len(content):,} characters; one entry may have at most {MAX_LOG_ENTRY_CHARS:,}.",
                limit=MAX_LOG_ENTRY_CHARS,
            )
        total += len(content)
        if total > MAX_LOG_REQUEST_CHARS:
            raise errors.LimitExceeded(
                f"One request may carry at most {MAX_LOG_REQUEST_CHARS:,} characters of log; split the batch.",
                limit=MAX_LOG_REQUEST_CHARS,
            )
        # A secret pasted into a conversation must never reach the append-only
        # log (nor consolidation and search, which read it): it is replaced by
        # [REDACTED:<rule>] before the row exists.
        redaction = scanner.redact_secrets(content)
        if redaction.count:
            redacted += redaction.count
            rules.update(redaction.rules)
        rows.append(LogEntry(session=session, agent_id=session.agent_id, user_ref=session.user_ref, role=role,
                             content=redaction.text))
    # LogEntry has no history tracking, so bulk_create is safe and one query.
    batch = LogBatch(LogEntry.objects.bulk_create(rows))
    batch.redacted, batch.redacted_rules = redacted, sorted(rules)
    if redacted:
        record_event(
            action="log.redacted",
            agent=session.agent,
            actor_agent=session.agent,
            user_ref=session.user_ref,
            target=session,
            summary=f"{redacted} secret(s) redacted from session #{session.pk}'s log before they were stored",
            details={"count": redacted, "rules": batch.redacted_rules, "entries": [row.pk for row in batch]},
        )
    return batch


def end_session(*, session: AgentSession) -> AgentSession:
    updated = AgentSession.objects.filter(pk=session.pk, ended_at__isnull=True).update(ended_at=timezone.now())
    session.refresh_from_db(fields=["ended_at"])
    if updated:
        record_event(
            action="session.end",
            agent=session.agent,
            actor_agent=session.agent,
            user_ref=session.user_ref,
            target=session,
            summary=f"Session #{session.pk} ended",
        )
    return session
