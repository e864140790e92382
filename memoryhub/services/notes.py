"""Notes: what an agent saves for itself before its history is compacted.

A note is a log entry with role `note` in one of the pair's sessions: it is
appended (and scanned, secrets redacted) by `sessions.append_log` like any
log entry, so consolidation reads it the way it reads every note, as the
agent's own summary (the llm backend's `n` lines, the heuristic's note
signals). Notes are never injected into a context; the agent reads the last
`NOTES_DAYS` days of them with `memory_view` (file `notes`) or
`GET /api/v1/memory/notes`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from memoryhub import context, errors
from memoryhub.models import Agent, AgentSession, LogEntry, LogRole
from memoryhub.services.limits import validate_content, validate_user_ref
from memoryhub.services.sessions import append_log, end_session, get_session, is_expired, max_age
from memoryhub.tool_schemas import NOTE_MAX

NOTES_DAYS = 2
NOTES_SHOWN = 50


@dataclass(frozen=True)
class SavedNote:
    entry: LogEntry
    session: AgentSession
    redacted: int
    redacted_rules: list[str]


@dataclass(frozen=True)
class NoteView:
    entry: int
    session: int
    text: str
    created_at: datetime
    blocked: tuple[str, ...]

    def as_dict(self) -> dict[str, object]:
        return {"entry": self.entry, "session": self.session, "text": self.text,
                "created_at": self.created_at.isoformat(), "blocked": list(self.blocked)}


def validate_note(value: object, *, field: str = "text") -> str:
    if not isinstance(value, str):
        raise errors.Invalid("The note must be a string.", field=field)
    text = validate_content(value, field=field).strip()
    if not text:
        raise errors.Invalid("The note is empty; write what you want to keep.", field=field)
    if len(text) > NOTE_MAX:
        raise errors.LimitExceeded(
            f"A note has at most {NOTE_MAX:,} characters; this one has {len(text):,}. Keep the summary short.",
            limit=NOTE_MAX, field=field,
        )
    return text


def open_session_for(*, agent: Agent, user_ref: str) -> AgentSession:
    """The pair's most recent session that is neither ended nor expired."""
    since = timezone.now() - max_age()
    session = (AgentSession.objects.filter(agent=agent, user_ref=user_ref, ended_at__isnull=True,
                                           started_at__gt=since)
               .order_by("-started_at", "-id").first())
    if session is None or is_expired(session):
        raise errors.NoOpenSession(
            f"There is no open session with user {user_ref!r} to note this in; start one (POST /api/v1/sessions) "
            "or pass `session`.", field="session",
        )
    return session


def add_note(*, agent: Agent, user_ref: object, text: object, session_id: object = None) -> SavedNote:
    """Append one note to a session of this agent and user (the agent is the
    acting principal): `session_id`, or the pair's most recent open session."""
    user_ref = validate_user_ref(user_ref)
    text = validate_note(text)
    if session_id is None:
        session = open_session_for(agent=agent, user_ref=user_ref)
    else:
        session = get_session(agent=agent, session_id=session_id, user_ref=user_ref)
    batch = append_log(session=session, entries=[{"role": LogRole.NOTE, "content": text}])
    return SavedNote(entry=batch[0], session=session, redacted=batch.redacted, redacted_rules=batch.redacted_rules)


def end_session_with_note(*, session: AgentSession, note: object = None) -> AgentSession:
    """End a session, logging its final note first (both or neither; a
    note for a session that already ended is refused, never dropped)."""
    if note is None:
        return end_session(session=session)
    text = validate_note(note, field="note")
    with transaction.atomic():
        append_log(session=session, entries=[{"role": LogRole.NOTE, "content": text}])
        return end_session(session=session)


def recent_notes(*, agent: Agent, user_ref: object, now: datetime | None = None) -> list[NoteView]:
    """The pair's notes of the last NOTES_DAYS days, oldest first (the
    newest NOTES_SHOWN of them), re-scanned as all served memory is."""
    user_ref = validate_user_ref(user_ref)
    since = (now or timezone.now()) - timedelta(days=NOTES_DAYS)
    rows = list(LogEntry.objects.filter(agent=agent, user_ref=user_ref, role=LogRole.NOTE, created_at__gte=since)
                .order_by("-id")[:NOTES_SHOWN])
    notes = []
    for row in reversed(rows):
        served = context.serve_untrusted(row.content)
        notes.append(NoteView(entry=row.pk, session=row.session_id, text=served.text, created_at=row.created_at,
                              blocked=served.blocked))
    return notes
