# mypy: disable-error-code="no-any-return"
# (history managers and models looked up by label are untyped: their querysets are Any)
"""What a subject erasure sweeps: every column of every model that can
hold an end user's words or name them, in one table.

Each `Sweep` row names a model, the columns it clears and how (its
treatment), which rows of it hold or name the subject, and the key of the
erasure's counts it adds to. `services.erasure.erase_subject` runs the rows
in order inside the approval's transaction, after the steps that are more
than a column sweep (the empty versions, withdrawn proposals, ended
sessions, cancelled runs).

Every other text, char or JSON column of every model is declared
subject-free here with its reason (`SUBJECT_FREE`). tests/memoryhub/
test_sweep.py walks every model Django knows — every app, history models
included — and fails when a column is in neither list, so a new column that
could name an end user cannot ship without a decision about erasure.

memoryhub imports no other app of the project: consolidation and
notifications add their own rows (`register`, `declare_subject_free`) from
their AppConfig.ready(), so the dependency points their way. Django's and
third-party apps' models (admin log, sign-in throttle, sessions, users) are
listed here: memoryhub already depends on them through its settings.

Which rows "name" the subject:

- rows recorded under the reference (a `user_ref` column equal to it, in the
  workspace — or, for audit events, under no workspace at all: refusals
  that named a workspace the actor has no role in are recorded without
  one) are the subject's whatever their text says;
- other rows are found by their free text (reasons, comments, summaries,
  the sign-in throttle's request data): the reference as a whole token —
  not inside a longer word, not a `#<id>` — and only for references of at
  least FREE_TEXT_MIN characters, so erasing user "42" or "a" does not
  tombstone every summary that mentions proposal #42 or the article "a".

Guarded tables (history, logs, audit, proposals, runs, served rows) are
written only through services.redaction (the database refuses anything
else); the columns listed for them must be the ones their redaction
statement sets (the test checks them against memoryhub.immutability's
REDACTABLE).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any

from django.apps import apps
from django.db.models import Model, Q, QuerySet, TextField
from django.db.models.functions import Cast

from memoryhub.models import Workspace
from memoryhub.services import redaction

# How a column is cleared.
TOMBSTONE = "tombstone"  # the dated tombstone of the erasure; empty stays empty
PSEUDONYM = "pseudonym"  # the reference becomes the erasure's pseudonym
CLEARED = "cleared"  # emptied: "" for text, {} or [] for JSON
REPLACED = "replaced"  # each occurrence of the reference becomes the pseudonym
DELETED = "deleted"  # the whole row is deleted
EMPTIED = "emptied"  # a served file's content: a new, empty version first (services.erasure)
TREATMENTS = frozenset({TOMBSTONE, PSEUDONYM, CLEARED, REPLACED, DELETED, EMPTIED})

# References shorter than this are looked for only in rows recorded under them.
FREE_TEXT_MIN = 3


@dataclass(frozen=True)
class Scope:
    """One erasure: whom, in which workspace, and what the rows get instead.
    `alias` and `change_id` are empty for a preview (services.erasure)."""

    workspace: Workspace
    user_ref: str
    alias: str = ""
    change_id: int = 0
    at: datetime | None = None

    @property
    def by(self) -> str:
        return f"change #{self.change_id}"

    @cached_property
    def tombstone(self) -> str:
        return redaction.tombstone(by=self.by, at=self.at)

    @cached_property
    def agent_ids(self) -> list[int]:
        return list(self.workspace.agents.values_list("pk", flat=True))

    @cached_property
    def _token(self) -> re.Pattern[str]:
        return re.compile(r"(?<![\w#])" + re.escape(self.user_ref) + r"(?!\w)")

    @property
    def searches_free_text(self) -> bool:
        return len(self.user_ref) >= FREE_TEXT_MIN

    def names(self, value: object, *, short: bool = False) -> bool:
        """Whether free text (or any string inside a JSON value) names the
        subject as a whole token; `short` looks for a reference under
        FREE_TEXT_MIN characters too (text known to be about the subject)."""
        if not (short or self.searches_free_text):
            return False
        return any(self._token.search(text) for text in _strings(value))

    def holds(self, value: object) -> bool:
        """Whether a row recorded under the reference mentions it anywhere
        (no token rule: the row is the subject's anyway)."""
        return any(self.user_ref in text for text in _strings(value))

    def mentions(self, *columns: str, json_columns: Iterable[str] = ()) -> Q:
        """A database prefilter: the columns contain the reference (as
        stored in JSON text too). Matches are then checked with names()."""
        if not self.searches_free_text:
            return Q(pk__in=[])
        query = Q()
        for column in columns:
            query |= Q(**{f"{column}__contains": self.user_ref})
        for column in json_columns:
            for needle in _json_needles(self.user_ref):
                query |= Q(**{f"_text_{column}__contains": needle})
        return query

    def replace(self, value: object) -> Any:
        """Every occurrence of the reference, in text or inside JSON, as the pseudonym."""
        if isinstance(value, str):
            return value.replace(self.user_ref, self.alias)
        if isinstance(value, list):
            return [self.replace(item) for item in value]
        if isinstance(value, dict):
            return {self.replace(k): self.replace(v) for k, v in value.items()}
        return value


def _strings(value: object) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _json_needles(user_ref: str) -> set[str]:
    # PostgreSQL's jsonb text keeps non-ASCII as is; Django writes SQLite's
    # JSON with \u escapes.
    return {json.dumps(user_ref)[1:-1], json.dumps(user_ref, ensure_ascii=False)[1:-1]}


def with_json_text(queryset: QuerySet[Any], *columns: str) -> QuerySet[Any]:
    """Annotate `_text_<column>` (the JSON as text) for Scope.mentions()."""
    return queryset.annotate(**{f"_text_{c}": Cast(c, TextField()) for c in columns})


Finder = Callable[[Scope], QuerySet[Model]]
Applier = Callable[["Sweep", Scope, QuerySet[Any]], int]


@dataclass(frozen=True)
class Sweep:
    """One row of the table: `model` ("app_label.ModelName"), its `columns`
    and their treatment, the `rows` that hold or name the subject, and the
    `count` key of the erasure's counts. Guarded tables name their
    services.redaction kind; `apply` overrides the plain column update."""

    model: str
    columns: Mapping[str, str]
    rows: Finder
    count: str
    redaction: str = ""
    apply: Applier | None = None
    note: str = ""

    def __post_init__(self) -> None:
        unknown = set(self.columns.values()) - TREATMENTS
        if unknown:
            raise ValueError(f"{self.model}: unknown treatment {sorted(unknown)}")

    @property
    def model_class(self) -> Any:
        return apps.get_model(self.model)

    def run(self, scope: Scope) -> int:
        rows = self.rows(scope)
        if self.apply is not None:
            return self.apply(self, scope, rows)
        if self.redaction:
            return redaction.redact(what=self.redaction, ids=rows.values_list("pk", flat=True), by=scope.by,
                                    pseudonym=scope.alias, at=scope.at)
        return update_columns(self, scope, rows)


def update_columns(sweep: Sweep, scope: Scope, rows: QuerySet[Any]) -> int:
    """The plain sweep of an unguarded table: each row's columns cleared by
    their treatment (rows recorded under another user keep their
    reference), or the row deleted."""
    if DELETED in sweep.columns.values():
        return int(sweep.model_class.objects.filter(pk__in=list(rows.values_list("pk", flat=True))).delete()[0])
    count = 0
    for row in rows.iterator(chunk_size=200):
        values: dict[str, object] = {}
        for column, treatment in sweep.columns.items():
            old = getattr(row, column)
            if treatment == TOMBSTONE:
                new = old if old in ("", None) else scope.tombstone
            elif treatment == PSEUDONYM:
                new = scope.alias if old == scope.user_ref else old
            elif treatment == CLEARED:
                new = type(old)() if isinstance(old, dict | list) else ""
            elif treatment == REPLACED:
                new = scope.replace(old)
                limit = getattr(sweep.model_class._meta.get_field(column), "max_length", None)
                if isinstance(new, str) and limit:
                    new = new[:limit]
            else:
                continue
            if new != old:
                values[column] = new
        if values:
            # Not history-tracked models: a plain UPDATE writes no history row to miss.
            sweep.model_class.objects.filter(pk=row.pk).update(**values)
            count += 1
    return count


_SWEEPS: list[Sweep] = []
SUBJECT_FREE: dict[str, dict[str, str]] = {}


def register(*sweeps: Sweep) -> None:
    """Add rows to the table (idempotent per model and count key)."""
    for sweep in sweeps:
        if not any(s.model == sweep.model and s.count == sweep.count for s in _SWEEPS):
            _SWEEPS.append(sweep)


def declare_subject_free(model: str, columns: Mapping[str, str]) -> None:
    """Columns of `model` that never hold or name an end user, each with why."""
    SUBJECT_FREE.setdefault(model, {}).update(columns)


def sweeps() -> list[Sweep]:
    return list(_SWEEPS)


def run(scope: Scope) -> dict[str, int]:
    counts: dict[str, int] = {}
    for sweep in _SWEEPS:
        counts[sweep.count] = counts.get(sweep.count, 0) + sweep.run(scope)
    return counts


def preview(scope: Scope) -> dict[str, int]:
    """How many rows each sweep would touch now, by count key."""
    counts: dict[str, int] = {}
    for sweep in _SWEEPS:
        counts[sweep.count] = counts.get(sweep.count, 0) + sweep.rows(scope).count()
    return counts


def text_columns(model: Any) -> list[str]:
    """The model's concrete text, char and JSON columns (by field name)."""
    from django.db import models

    return [f.name for f in model._meta.concrete_fields
            if isinstance(f, models.CharField | models.TextField | models.JSONField)]


def unlisted_columns(models: Iterable[Any]) -> list[str]:
    """`app_label.Model.column` of each text column that no sweep clears and
    nothing declares subject-free."""
    swept: dict[str, set[str]] = {}
    for sweep in _SWEEPS:
        swept.setdefault(sweep.model, set()).update(sweep.columns)
    missing = []
    for model in models:
        label = model._meta.label
        for column in text_columns(model):
            if column not in swept.get(label, set()) and column not in SUBJECT_FREE.get(label, {}):
                missing.append(f"{label}.{column}")
    return missing


# --- the core's rows --------------------------------------------------------------------------


def _model(label: str) -> Any:
    return apps.get_model(label)


def _versions(scope: Scope) -> QuerySet[Model]:
    return _model("memoryhub.MemoryFile").history.filter(agent_id__in=scope.agent_ids, user_ref=scope.user_ref)


def _keyed(label: str) -> Finder:
    def rows(scope: Scope) -> QuerySet[Model]:
        return _model(label).objects.filter(agent_id__in=scope.agent_ids, user_ref=scope.user_ref)

    return rows


def _events(scope: Scope) -> QuerySet[Model]:
    """Audit events recorded under the reference in the workspace or under
    none, and events of either whose summary or details name it."""
    events = _model("memoryhub.AuditEvent").objects.filter(
        Q(workspace=scope.workspace) | Q(workspace__isnull=True))
    keyed = set(events.filter(user_ref=scope.user_ref).values_list("pk", flat=True))
    candidates = with_json_text(events.exclude(user_ref=scope.user_ref), "details").filter(
        scope.mentions("summary", json_columns=["details"])).only("id", "summary", "details")
    named = {e.pk for e in candidates if scope.names(e.summary) or scope.names(e.details)}
    return _model("memoryhub.AuditEvent").objects.filter(pk__in=keyed | named)


def _apply_events(sweep: Sweep, scope: Scope, rows: QuerySet[Any]) -> int:
    """Details always become a tombstone (they hold reasons and comments);
    the summary only when it names the subject (summaries are otherwise
    ids, kinds and versions). Only rows recorded under the reference take
    the pseudonym: an event about another user that names this one keeps
    its own user."""
    groups: dict[tuple[str, bool], list[int]] = {}
    for event in rows.only("id", "summary", "user_ref"):
        keyed = event.user_ref == scope.user_ref
        named = scope.holds(event.summary) if keyed else scope.names(event.summary)
        groups.setdefault(("audit_summary" if named else "audit", keyed), []).append(event.pk)
    return sum(redaction.redact(what=what, ids=ids, by=scope.by, pseudonym=scope.alias if keyed else None,
                                at=scope.at)
               for (what, keyed), ids in groups.items())


def _changes(scope: Scope) -> QuerySet[Model]:
    """Other governance changes about the subject (a release of their file)
    and changes of the workspace whose text names them. The erasure's own
    change is the caller's (services.erasure)."""
    changes = _model("memoryhub.Change").objects.filter(workspace=scope.workspace).exclude(pk=scope.change_id)
    keyed = set(changes.filter(user_ref=scope.user_ref).values_list("pk", flat=True))
    candidates = changes.exclude(user_ref=scope.user_ref).filter(
        scope.mentions("summary", "reason", "decision_comment")).only("id", "summary", "reason", "decision_comment")
    named = {c.pk for c in candidates if scope.names([c.summary, c.reason, c.decision_comment])}
    return _model("memoryhub.Change").objects.filter(pk__in=keyed | named)


def _apply_changes(sweep: Sweep, scope: Scope, rows: QuerySet[Any]) -> int:
    count = 0
    for change in rows.only("id", "user_ref", "summary", "reason", "decision_comment"):
        keyed = change.user_ref == scope.user_ref
        fields = {"summary": scope.replace(change.summary)[:500]}
        for column in ("reason", "decision_comment"):
            text = getattr(change, column)
            if text and (keyed or scope.names(text)):
                fields[column] = scope.tombstone
        if keyed:
            fields["user_ref"] = scope.alias
        # Change is not history-tracked; the approval's audit event says why.
        _model("memoryhub.Change").objects.filter(pk=change.pk).update(**fields)
        count += 1
    return count


def _cached_answers(scope: Scope) -> QuerySet[Model]:
    """Replayable API answers (Idempotency-Key records) of the workspace's
    agents and staff about the subject (recorded under their reference), or
    whose answer, headers or key name them: a session's context, a write's
    echo, a Location with ?user=."""
    principals = [f"agent:{pk}" for pk in scope.agent_ids]
    principals += [f"user:{pk}" for pk in scope.workspace.memberships.values_list("user_id", flat=True)]
    records = with_json_text(_model("memoryhub.IdempotencyRecord").objects.filter(principal__in=principals),
                             "body", "headers")
    query = Q(key__contains=scope.user_ref)
    for needle in _json_needles(scope.user_ref):
        query |= Q(_text_body__contains=needle) | Q(_text_headers__contains=needle)
    found = [r.pk for r in records.filter(query).only("id", "key", "body", "headers")
             if scope.holds([r.key, r.body, r.headers])]
    found += records.filter(user_ref=scope.user_ref).values_list("pk", flat=True)
    return _model("memoryhub.IdempotencyRecord").objects.filter(pk__in=found)


def _admin_log(scope: Scope) -> QuerySet[Model]:
    """Django admin's change log: an object's name there is its __str__,
    which for files, sessions, runs and pairs includes the user reference."""
    entries = _model("admin.LogEntry").objects.filter(scope.mentions("object_repr", "change_message"))
    return _model("admin.LogEntry").objects.filter(
        pk__in=[e.pk for e in entries.only("id", "object_repr", "change_message")
                if scope.names([e.object_repr, e.change_message])])


_AXES_TEXT = ("user_agent", "username", "http_accept", "path_info")


def _throttle(label: str, *extra: str) -> Finder:
    """Sign-in throttle rows (django-axes) whose request data names the
    subject: a username typed as their reference, a `next=` URL with
    ?user=. They are a short-lived counter; the sign-in failures and
    lockouts stay in the audit log (as events, swept above)."""
    columns = (*_AXES_TEXT, *extra)

    def rows(scope: Scope) -> QuerySet[Model]:
        model = _model(label)
        found = [r.pk for r in model.objects.filter(scope.mentions(*columns)).only("id", *columns)
                 if scope.names([getattr(r, c) or "" for c in columns])]
        return model.objects.filter(pk__in=found)

    return rows


register(
    Sweep("memoryhub.HistoricalMemoryFile",
          {"content": TOMBSTONE, "history_change_reason": TOMBSTONE, "user_ref": PSEUDONYM},
          _versions, "versions", redaction="history"),
    Sweep("memoryhub.MemoryFile", {"content": EMPTIED, "user_ref": PSEUDONYM, "withheld_reason": TOMBSTONE},
          _keyed("memoryhub.MemoryFile"), "files", redaction="served"),
    Sweep("memoryhub.Proposal",
          {"base_content": TOMBSTONE, "proposed_content": TOMBSTONE, "diff": TOMBSTONE, "rationale": TOMBSTONE,
           "reason": TOMBSTONE, "decision_comment": TOMBSTONE, "pii": CLEARED, "user_ref": PSEUDONYM},
          _keyed("memoryhub.Proposal"), "proposals", redaction="proposal",
          note="rationale: each item's summary and reason, its kind and evidence ids kept"),
    Sweep("memoryhub.LogEntry", {"content": TOMBSTONE, "user_ref": PSEUDONYM},
          _keyed("memoryhub.LogEntry"), "log_entries", redaction="log"),
    Sweep("memoryhub.EntryVector", {"user_ref": DELETED, "content_hash": DELETED},
          _keyed("memoryhub.EntryVector"), "search_vectors",
          note="the semantic index of the subject's files and logs (memoryhub.search.semantic)"),
    Sweep("memoryhub.AgentSession",
          {"user_ref": PSEUDONYM, "external_id": CLEARED, "context": CLEARED, "parts": CLEARED},
          _keyed("memoryhub.AgentSession"), "sessions"),
    Sweep("memoryhub.AuditEvent", {"summary": TOMBSTONE, "details": TOMBSTONE, "user_ref": PSEUDONYM},
          _events, "events", redaction="audit", apply=_apply_events,
          note="summary only when it names the subject; details always"),
    Sweep("memoryhub.Change",
          {"user_ref": PSEUDONYM, "summary": REPLACED, "reason": TOMBSTONE, "decision_comment": TOMBSTONE},
          _changes, "changes", apply=_apply_changes),
    Sweep("memoryhub.IdempotencyRecord",
          {"principal": DELETED, "key": DELETED, "request_hash": DELETED, "user_ref": DELETED, "body": DELETED,
           "headers": DELETED},
          _cached_answers, "cached_answers"),
    Sweep("admin.LogEntry", {"object_repr": REPLACED, "change_message": REPLACED}, _admin_log, "admin_log"),
    *(Sweep(label, {c: DELETED for c in (*_AXES_TEXT, *extra)}, _throttle(label, *extra), "login_throttle")
      for label, extra in (("axes.AccessAttempt", ("get_data", "post_data")), ("axes.AccessFailureLog", ()),
                           ("axes.AccessLog", ("session_hash",)))),
)

_CONFIG = "configuration staff set for the workspace or agent; it describes the service, not an end user"
_ENUM = "a value from a fixed list"
_STAFF = "a staff member's name or sign-in data, never an end user's"
_MARK = "the redaction's own mark (`change #N` or `retention`)"

for _label, _columns in {
    "memoryhub.Workspace": {"slug": _CONFIG, "name": _CONFIG, "default_write_policy": _ENUM, "pii_policy": _ENUM,
                            "review_reason_codes": _CONFIG, "high_risk_approval": _ENUM},
    "memoryhub.Membership": {"role": _ENUM},
    "memoryhub.Agent": {"slug": _CONFIG, "name": _CONFIG, "description": _CONFIG, "strategy": _ENUM,
                        "write_policy": _ENUM, "consolidation_backend": _ENUM, "token_encoding": _ENUM},
    "memoryhub.ToolSetting": {"name": _CONFIG, "description": _CONFIG, "parameters": _CONFIG},
    "memoryhub.ApiKey": {"name": _CONFIG, "prefix": "a key's public prefix", "key_hash": "a key's hash"},
    "memoryhub.StaffToken": {"name": _STAFF, "prefix": "a token's public prefix", "key_hash": "a token's hash"},
    "memoryhub.HistoricalMemoryFile": {
        "redacted_by": _MARK, "source": _ENUM, "history_username": _STAFF, "approved_by_username": _STAFF,
        "kind": _ENUM, "history_type": "simple-history's +, ~ or -"},
    "memoryhub.MemoryFile": {"kind": _ENUM, "revoked_versions": "version numbers"},
    "memoryhub.Proposal": {
        "redacted_by": _MARK, "kind": _ENUM, "source": _ENUM, "status": _ENUM, "author_username": _STAFF,
        "decided_by_username": _STAFF, "risk_tags": "tag names from memoryhub.risk.TAGS",
        "reason_code": "a code from the workspace's list", "claimed_by_username": _STAFF,
        "first_approved_by_username": _STAFF},
    "memoryhub.AgentSession": {"snapshot": "the version number of each file the context used and the tool "
                                           "set's digest (memoryhub.context), never text"},
    "memoryhub.LogEntry": {"redacted_by": _MARK, "role": _ENUM},
    "memoryhub.AuditEvent": {"redacted_by": _MARK, "action": _ENUM, "actor_username": _STAFF,
                             "target_type": "a model name", "target_id": "a primary key"},
    "memoryhub.Change": {
        "kind": _ENUM, "file_kind": _ENUM, "status": _ENUM, "requested_by_username": _STAFF,
        "decided_by_username": _STAFF,
        "payload": "the governed settings' values (policies, limits, budgets, retention) a change applies and "
                   "the values or version it was requested against; an erasure's subject hash and counts",
        "result": "what an approval applied: setting names, a version number, an erasure's counts and hash"},
    "memoryhub.ErasureRecord": {"subject_hash": "an HMAC nobody can read the reference back from",
                                "pseudonym": "the erasure's pseudonym", "counts": "numbers",
                                "requested_by_username": _STAFF, "approved_by_username": _STAFF},
    "admin.LogEntry": {"object_id": "a primary key"},
    "auth.Permission": {"name": "Django's permission names", "codename": "Django's permission names"},
    "auth.Group": {"name": _STAFF},
    "auth.User": {"password": _STAFF, "username": _STAFF, "first_name": _STAFF, "last_name": _STAFF,
                  "email": _STAFF},
    "contenttypes.ContentType": {"app_label": "a model name", "model": "a model name"},
    "sessions.Session": {
        "session_key": "a random key",
        "session_data": "a staff member's console sign-in (user id, backend, 2FA state, CSRF); console notices "
                        "name change and proposal numbers, and the end-to-end erasure test decodes these rows"},
    "otp_totp.TOTPDevice": {"name": _STAFF, "key": _STAFF},
    "otp_static.StaticDevice": {"name": _STAFF},
    "otp_static.StaticToken": {"token": _STAFF},
}.items():
    declare_subject_free(_label, _columns)

