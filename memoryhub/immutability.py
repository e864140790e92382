"""What the database itself refuses, whatever the client.

An auditor must not have to trust the ORM. Triggers guard seven tables:

- history rows (`memoryhub_historicalmemoryfile`), log entries, audit
  events and erasure records are append-only: no UPDATE, no DELETE, no TRUNCATE, and no INSERT
  back-dated by more than CLOCK_SKEW;
- a proposal may change while it is open (pending or stale) — its status,
  its decision — but never its content or who made it; once decided it is
  frozen, and it is never deleted. The same for a consolidation run once it
  finished. Neither is inserted back-dated;
- the served row (`memoryhub_memoryfile`) never loses a version, never
  changes content without the next version number and is never deleted.
  On PostgreSQL a constraint trigger, DEFERRABLE INITIALLY DEFERRED, checks
  at commit that every row written in the transaction equals its latest
  history row (id, version, content): simple-history writes that row after
  the UPDATE, so only a check at commit can see both. A served row changed
  by SQL without a history row cannot commit. SQLite has no deferred
  triggers: there the next version is refused unless the row still equals
  its latest history row, so a tampered row is caught at the next write,
  not at once (documented in docs/operations.md).

Serving-state columns of the served row (`withheld_*`, `revoked_versions`,
`updated_at`) change without a new version (withhold, release, rollback)
and are not guarded.

Redaction is the one exception (services.redaction, docs/compliance.md).
While a transaction holds the redaction flag, an UPDATE is let through when
it changes nothing but the table's REDACTABLE columns, each into its
tombstone form (text `[REDACTED …`, a user reference `erased:…`, empty
personal-data findings) and, where the table has them, sets `redacted_at`
and `redacted_by`. Anything else is refused as before, flag or not. The
flag is:

- PostgreSQL: the transaction-local setting `memoryhub.redacting = 'on'`,
  set only inside `memoryhub_redact()`, a SECURITY DEFINER function owned
  by the tables' owner that runs the tombstone UPDATEs itself. The app role
  has no UPDATE on the append-only tables, so with role separation it can
  redact only through that function: it can destroy text (into a dated,
  attributed tombstone), never write any other;
- SQLite: a row in the one-row table `memoryhub_redacting`, inserted and
  deleted inside the redacting transaction and never committed. SQLite
  serialises writers, so no other connection can write while it exists
  and none ever reads it.

Each guarded table has its own trigger function on PostgreSQL
(`memoryhub_guard_<table>`); on SQLite each rule is its own trigger, named
after its table, and every rule that refuses an UPDATE first asks whether
the UPDATE is a redaction. SQLite triggers list the table's columns as they
are when installed: install() drops and recreates them, and runs after
every migrate (apps.py), so a column added later is guarded too.

Demo data (`seed_demo`, docs/operations.md "Demo data") is the one
exception to "no back-dated INSERT", and a narrow one: a seeding window
(`memoryhub_seedwindow`, a single row) may be opened only on an empty
database — no audit event, proposal, log entry or history row yet — and only
once: it can be closed but never reopened, changed or deleted, so it stays
as the record of what was seeded and when. `seed_demo` opens and closes it
in the one transaction that writes the back-dated history, so no other
connection ever sees it open. The app's database role may only read it.

The app's database role owns none of these tables (docs/operations.md,
memoryhub.db_roles), so it can neither drop nor disable these triggers.
SQLite has no roles and no way to switch a trigger off, so tests drop and
recreate the triggers around a flush (tests/conftest.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import DatabaseError, transaction

if TYPE_CHECKING:
    from django.db.backends.base.base import BaseDatabaseWrapper

# How far a row's own timestamp may lie behind the database clock at INSERT:
# app servers' clocks drift, and a timestamp is taken before its INSERT runs.
CLOCK_SKEW_SECONDS = 300

HISTORY = "memoryhub_historicalmemoryfile"
LOG = "memoryhub_logentry"
AUDIT = "memoryhub_auditevent"
PROPOSAL = "memoryhub_proposal"
RUN = "consolidation_consolidationrun"
SERVED = "memoryhub_memoryfile"
ERASURES = "memoryhub_erasurerecord"
SEED_WINDOW = "memoryhub_seedwindow"

APPEND_ONLY_TABLES = (HISTORY, LOG, AUDIT, ERASURES)
# Each append-only table's own timestamp, checked against back-dating.
_STAMP = {HISTORY: "history_date", LOG: "created_at", AUDIT: "created_at", ERASURES: "created_at"}
GUARDED_TABLES = (*APPEND_ONLY_TABLES, PROPOSAL, RUN, SERVED)

OPEN_PROPOSAL = ("pending", "stale")
DECIDED_BY_A_PERSON = ("approved", "rejected", "withdrawn")
ACTIVE_RUN = ("queued", "running")
# What a proposal is about and says: fixed from its INSERT on, open or not.
PROPOSAL_FIXED = ("agent_id", "user_ref", "kind", "base_version", "base_content", "proposed_content", "diff",
                  "rationale", "reason", "source", "author_user_id", "author_agent_id", "author_username",
                  "created_at", "revises_id", "rollback_to")


# --- redaction -------------------------------------------------------------------------

TOMBSTONE_PREFIX = "[REDACTED "
PSEUDONYM_PREFIX = "erased:"
PG_REDACTING = "memoryhub.redacting"
SQLITE_FLAG_TABLE = "memoryhub_redacting"
REDACT_FUNCTION = "memoryhub_redact"

# A tombstone is exactly `[REDACTED <YYYY-MM-DD> by change #<id>]` or
# `[REDACTED <YYYY-MM-DD> by retention]`, and a pseudonym `erased:` and 32
# hex digits: a redaction can destroy text, never carry new text in.
_PG_TOMBSTONE = r"'^\[REDACTED [0-9]{4}-[0-9]{2}-[0-9]{2} by (change #[0-9]{1,19}|retention)\]$'"
_PG_PSEUDONYM = "'^erased:[0-9a-f]{32}$'"
_GLOB_DATE = "[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]"


def _sqlite_is_tombstone(expr: str) -> str:
    return (f"(({expr}) GLOB '[[]REDACTED {_GLOB_DATE} by retention]' OR "
            f"(({expr}) GLOB '[[]REDACTED {_GLOB_DATE} by change #[0-9]*]' AND length({expr}) <= 52 "
            f"AND ltrim(substr({expr}, 33, length({expr}) - 33), '0123456789') = ''))")


def _sqlite_is_pseudonym(expr: str) -> str:
    return f"(({expr}) GLOB 'erased:{'[0-9a-f]' * 32}')"


# How a redactable column may change: (kind of rule). Every other column
# of the table must stay as it is.
TEXT, PSEUDONYM, STAMP, DETAILS, RATIONALE, NO_FINDINGS = (
    "text", "pseudonym", "stamp", "details", "rationale", "no_findings")
_REDACTED_STAMPS = {"redacted_at": STAMP, "redacted_by": STAMP}
REDACTABLE: dict[str, dict[str, str]] = {
    HISTORY: {"content": TEXT, "history_change_reason": TEXT, "user_ref": PSEUDONYM, **_REDACTED_STAMPS},
    LOG: {"content": TEXT, "user_ref": PSEUDONYM, **_REDACTED_STAMPS},
    AUDIT: {"summary": TEXT, "details": DETAILS, "user_ref": PSEUDONYM, **_REDACTED_STAMPS},
    PROPOSAL: {"base_content": TEXT, "proposed_content": TEXT, "diff": TEXT, "rationale": RATIONALE,
               "reason": TEXT, "decision_comment": TEXT, "pii": NO_FINDINGS, "user_ref": PSEUDONYM,
               **_REDACTED_STAMPS},
    RUN: {"error": TEXT, "user_ref": PSEUDONYM},
    SERVED: {"user_ref": PSEUDONYM, "withheld_reason": TEXT},
}


def _sql_list(values: tuple[str, ...]) -> str:
    return ", ".join(f"'{v}'" for v in values)


# --- PostgreSQL ---------------------------------------------------------------------

def _pg_column_ok(column: str, rule: str) -> str:
    new, old = f"NEW.{column}", f"OLD.{column}"
    if rule == TEXT:
        return f"({new} IS NOT DISTINCT FROM {old} OR {new} ~ {_PG_TOMBSTONE})"
    if rule == PSEUDONYM:
        return f"({new} IS NOT DISTINCT FROM {old} OR {new} ~ {_PG_PSEUDONYM})"
    if rule == STAMP:
        return f"{new} IS NOT NULL"
    if rule == DETAILS:
        return (f"({new} IS NOT DISTINCT FROM {old} OR ({new} = jsonb_build_object('redacted', {new}->>'redacted') "
                f"AND {new}->>'redacted' ~ {_PG_TOMBSTONE}))")
    if rule == RATIONALE:
        return (f"({new} IS NOT DISTINCT FROM {old} OR (jsonb_typeof({new}) = 'array' AND NOT EXISTS ("
                f"SELECT 1 FROM jsonb_array_elements({new}) AS r WHERE jsonb_typeof(r) <> 'object' OR EXISTS ("
                "SELECT 1 FROM jsonb_each(r) AS kv WHERE kv.key NOT IN ('kind', 'evidence') AND "
                f"(jsonb_typeof(kv.value) <> 'string' OR NOT (kv.value #>> '{{}}' ~ {_PG_TOMBSTONE}))))))")
    if rule == NO_FINDINGS:
        return f"({new} IS NOT DISTINCT FROM {old} OR {new} = '[]'::jsonb)"
    raise ValueError(rule)


def _pg_redaction_allowed(table: str) -> str:
    """An IF that lets exactly a redaction UPDATE through (none for a table
    that has nothing to redact)."""
    columns = REDACTABLE.get(table)
    if not columns:
        return ""
    # A stored generated column (search_vector, migration 0004) is not yet
    # computed in NEW of a BEFORE trigger; it follows `content` anyway.
    names = ", ".join(f"'{c}'" for c in [*columns, "search_vector"])
    checks = " AND ".join(_pg_column_ok(c, rule) for c, rule in columns.items())
    return f"""
    IF TG_OP = 'UPDATE' AND current_setting('{PG_REDACTING}', true) = 'on'
       AND (to_jsonb(NEW) - ARRAY[{names}]) = (to_jsonb(OLD) - ARRAY[{names}])
       AND {checks} THEN
        RETURN NEW;
    END IF;"""


_PG_REFUSE = "RAISE EXCEPTION 'memoryhub: {message}' USING ERRCODE = 'insufficient_privilege'"
_PG_TOO_OLD = f"clock_timestamp() - interval '{CLOCK_SKEW_SECONDS} seconds'"
# True only inside seed_demo's transaction on a database that was empty.
_PG_SEEDING = f"EXISTS (SELECT 1 FROM {SEED_WINDOW} WHERE closed_at IS NULL)"


def _pg_append_only(table: str) -> str:
    stamp = _STAMP[table]
    return f"""
CREATE OR REPLACE FUNCTION memoryhub_guard_{table}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN{_pg_redaction_allowed(table)}
    IF TG_OP = 'INSERT' THEN
        IF NEW.{stamp} < {_PG_TOO_OLD} AND NOT {_PG_SEEDING} THEN
            RAISE EXCEPTION 'memoryhub: INSERT on {table} is refused: {stamp} % is back-dated', NEW.{stamp}
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'memoryhub: % on % is refused: this table is append-only', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
"""


_PG_PROPOSAL = f"""
CREATE OR REPLACE FUNCTION memoryhub_guard_{PROPOSAL}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN{_pg_redaction_allowed(PROPOSAL)}
    IF TG_OP = 'INSERT' THEN
        IF (NEW.created_at < {_PG_TOO_OLD} OR NEW.decided_at < {_PG_TOO_OLD}) AND NOT {_PG_SEEDING} THEN
            {_PG_REFUSE.format(message='INSERT on {PROPOSAL} is refused: the proposal is back-dated')};
        END IF;
        RETURN NEW;
    END IF;
    IF TG_OP = 'DELETE' THEN
        IF OLD.status NOT IN ({_sql_list(OPEN_PROPOSAL)}) THEN
            {_PG_REFUSE.format(message='DELETE on {PROPOSAL} is refused: a decided proposal is kept')};
        END IF;
        RETURN OLD;
    END IF;
    IF OLD.status NOT IN ({_sql_list(OPEN_PROPOSAL)}) THEN
        RAISE EXCEPTION 'memoryhub: UPDATE on {PROPOSAL} is refused: proposal % is already %', OLD.id, OLD.status
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF ({", ".join(f"NEW.{c}" for c in PROPOSAL_FIXED)}) IS DISTINCT FROM
       ({", ".join(f"OLD.{c}" for c in PROPOSAL_FIXED)}) THEN
        {_PG_REFUSE.format(message='UPDATE on {PROPOSAL} is refused: what a proposal says is fixed when it is made')};
    END IF;
    IF NEW.status IN ({_sql_list(DECIDED_BY_A_PERSON)}) AND
       (NEW.decided_at IS NULL OR (NEW.decided_at < {_PG_TOO_OLD} AND NOT {_PG_SEEDING})) THEN
        {_PG_REFUSE.format(message='UPDATE on {PROPOSAL} is refused: the decision is back-dated')};
    END IF;
    RETURN NEW;
END;
$$;
"""

_PG_RUN = f"""
CREATE OR REPLACE FUNCTION memoryhub_guard_{RUN}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN{_pg_redaction_allowed(RUN)}
    IF TG_OP = 'INSERT' THEN
        IF (NEW.created_at < {_PG_TOO_OLD} OR NEW.finished_at < {_PG_TOO_OLD}) AND NOT {_PG_SEEDING} THEN
            {_PG_REFUSE.format(message='INSERT on {RUN} is refused: the run is back-dated')};
        END IF;
        RETURN NEW;
    END IF;
    IF OLD.status NOT IN ({_sql_list(ACTIVE_RUN)}) THEN
        RAISE EXCEPTION 'memoryhub: % on {RUN} is refused: run % already finished (%)', TG_OP, OLD.id, OLD.status
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    IF NEW.created_at IS DISTINCT FROM OLD.created_at OR NEW.finished_at < OLD.created_at THEN
        {_PG_REFUSE.format(message='UPDATE on {RUN} is refused: the run is back-dated')};
    END IF;
    RETURN NEW;
END;
$$;
"""

# Immediate checks of one statement: identity, version order, content only
# with the next version. Serving-state columns are free.
_PG_SERVED = f"""
CREATE OR REPLACE FUNCTION memoryhub_guard_{SERVED}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN{_pg_redaction_allowed(SERVED)}
    IF TG_OP = 'DELETE' THEN
        {_PG_REFUSE.format(message='DELETE on {SERVED} is refused: an absent file is empty content, a new version')};
    END IF;
    IF (NEW.id, NEW.agent_id, NEW.user_ref, NEW.kind) IS DISTINCT FROM (OLD.id, OLD.agent_id, OLD.user_ref, OLD.kind)
    THEN
        {_PG_REFUSE.format(message='UPDATE on {SERVED} is refused: a file never changes whose file it is')};
    END IF;
    IF NEW.version < OLD.version THEN
        RAISE EXCEPTION 'memoryhub: UPDATE on {SERVED} is refused: version % would go back to %', OLD.version,
            NEW.version USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF NEW.version NOT IN (OLD.version, OLD.version + 1)
       OR (NEW.content IS DISTINCT FROM OLD.content AND NEW.version = OLD.version) THEN
        {_PG_REFUSE.format(message='UPDATE on {SERVED} is refused: content changes only as the next version')};
    END IF;
    RETURN NEW;
END;
$$;
"""

# At commit: every served row written in the transaction is its latest
# history row. Reads the row as it is then, not NEW: a row written twice in
# one transaction is checked in its final state.
_PG_SERVED_MATCHES_HISTORY = f"""
CREATE OR REPLACE FUNCTION memoryhub_served_matches_history() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    served record;
    latest record;
BEGIN
    SELECT id, version, content INTO served FROM {SERVED} WHERE id = NEW.id;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    SELECT version, content INTO latest FROM {HISTORY} WHERE id = NEW.id ORDER BY history_id DESC LIMIT 1;
    IF NOT FOUND OR latest.version IS DISTINCT FROM served.version OR latest.content IS DISTINCT FROM served.content
    THEN
        RAISE EXCEPTION 'memoryhub: {SERVED} row % (version %) does not match its latest history row: served '
            'content changes only with a history row', served.id, served.version
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NULL;
END;
$$;
"""

_PG_FUNCTIONS = {
    **{table: _pg_append_only(table) for table in APPEND_ONLY_TABLES},
    PROPOSAL: _PG_PROPOSAL,
    RUN: _PG_RUN,
    SERVED: _PG_SERVED,
}


def _pg_install(table: str) -> list[str]:
    function = f"memoryhub_guard_{table}"
    events = "INSERT OR UPDATE OR DELETE" if table != SERVED else "UPDATE OR DELETE"
    statements = [
        _PG_FUNCTIONS[table],
        f"DROP TRIGGER IF EXISTS {table}_guard ON {table};",
        f"CREATE TRIGGER {table}_guard BEFORE {events} ON {table} FOR EACH ROW EXECUTE FUNCTION {function}();",
        # Row triggers never see TRUNCATE: it needs its own statement trigger.
        f"DROP TRIGGER IF EXISTS {table}_no_truncate ON {table};",
        f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
        "FOR EACH STATEMENT EXECUTE FUNCTION memoryhub_refuse_truncate();",
    ]
    if table == SERVED:
        statements += [
            _PG_SERVED_MATCHES_HISTORY,
            f"DROP TRIGGER IF EXISTS {SERVED}_matches_history ON {SERVED};",
            f"CREATE CONSTRAINT TRIGGER {SERVED}_matches_history AFTER INSERT OR UPDATE ON {SERVED} "
            "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION memoryhub_served_matches_history();",
        ]
    return statements


_PG_REFUSE_TRUNCATE = """
CREATE OR REPLACE FUNCTION memoryhub_refuse_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'memoryhub: TRUNCATE on % is refused: this table is append-only', TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
"""

# The one way to redact on PostgreSQL. SECURITY DEFINER: it runs as the
# tables' owner (the role migrations run as), so an app role without UPDATE
# on the append-only tables can still redact, and only into tombstones. The
# flag is on for its own UPDATE alone. `p_what` picks a fixed statement;
# nothing of the caller's reaches SQL but values.
def _pg_redact_function(schema: str) -> str:
    tomb = "CASE WHEN {c} = '' THEN '' ELSE p_tombstone END"
    # simple-history stores "no reason" as NULL.
    tomb_null = "CASE WHEN coalesce({c}, '') = '' THEN {c} ELSE p_tombstone END"
    pseud = "coalesce(p_pseudonym, user_ref)"
    stamps = "redacted_at = now(), redacted_by = p_by"
    rationale = ("coalesce((SELECT jsonb_agg(jsonb_build_object('kind', r->'kind', 'evidence', "
                 "coalesce(r->'evidence', '[]'::jsonb), 'summary', p_tombstone, 'reason', p_tombstone)) "
                 "FROM jsonb_array_elements(CASE WHEN jsonb_typeof(rationale) = 'array' THEN rationale "
                 "ELSE '[]'::jsonb END) AS r), '[]'::jsonb)")
    audit = (f"user_ref = CASE WHEN user_ref = '' THEN '' ELSE {pseud} END, "
             f"details = jsonb_build_object('redacted', p_tombstone), {stamps}")
    return f"""
CREATE OR REPLACE FUNCTION {REDACT_FUNCTION}(p_what text, p_ids bigint[], p_tombstone text, p_by text,
                                             p_pseudonym text DEFAULT NULL)
RETURNS integer LANGUAGE plpgsql SECURITY DEFINER SET search_path = {schema}, pg_temp AS $$
DECLARE
    n integer;
BEGIN
    IF p_tombstone IS NULL OR NOT (p_tombstone ~ {_PG_TOMBSTONE}) OR coalesce(p_by, '') = ''
       OR (p_pseudonym IS NOT NULL AND NOT (p_pseudonym ~ {_PG_PSEUDONYM})) THEN
        RAISE EXCEPTION 'memoryhub: a redaction needs a tombstone, who redacts, and a pseudonym or none'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM set_config('{PG_REDACTING}', 'on', true);
    IF p_what = 'history' THEN
        UPDATE {HISTORY} SET content = {tomb.format(c="content")},
            history_change_reason = {tomb_null.format(c="history_change_reason")}, user_ref = {pseud}, {stamps}
            WHERE history_id = ANY(p_ids);
    ELSIF p_what = 'log' THEN
        UPDATE {LOG} SET content = p_tombstone, user_ref = {pseud}, {stamps} WHERE id = ANY(p_ids);
    ELSIF p_what = 'proposal' THEN
        UPDATE {PROPOSAL} SET base_content = {tomb.format(c="base_content")},
            proposed_content = {tomb.format(c="proposed_content")}, diff = {tomb.format(c="diff")},
            reason = {tomb.format(c="reason")}, decision_comment = {tomb.format(c="decision_comment")},
            rationale = {rationale}, pii = '[]'::jsonb, user_ref = {pseud}, {stamps} WHERE id = ANY(p_ids);
    ELSIF p_what = 'audit' THEN
        UPDATE {AUDIT} SET {audit} WHERE id = ANY(p_ids);
    ELSIF p_what = 'audit_summary' THEN
        UPDATE {AUDIT} SET summary = p_tombstone, {audit} WHERE id = ANY(p_ids);
    ELSIF p_what = 'run' THEN
        UPDATE {RUN} SET error = {tomb.format(c="error")}, user_ref = {pseud} WHERE id = ANY(p_ids);
    ELSIF p_what = 'served' THEN
        UPDATE {SERVED} SET user_ref = {pseud}, withheld_reason = {tomb.format(c="withheld_reason")}
            WHERE id = ANY(p_ids);
    ELSE
        RAISE EXCEPTION 'memoryhub: nothing to redact called %', p_what USING ERRCODE = 'invalid_parameter_value';
    END IF;
    GET DIAGNOSTICS n = ROW_COUNT;
    PERFORM set_config('{PG_REDACTING}', 'off', true);
    RETURN n;
END;
$$;
REVOKE ALL ON FUNCTION {REDACT_FUNCTION}(text, bigint[], text, text, text) FROM PUBLIC;
"""


# Names used by the first version of these triggers (migration 0002).
_PG_LEGACY = [
    *(f"DROP TRIGGER IF EXISTS {t}_append_only ON {t};" for t in APPEND_ONLY_TABLES),
    "DROP FUNCTION IF EXISTS memoryhub_refuse_change() CASCADE;",
]


# --- SQLite ------------------------------------------------------------------------

_SQLITE_TOO_OLD = f"strftime('%Y-%m-%d %H:%M:%f', 'now', '-{CLOCK_SKEW_SECONDS} seconds')"
_SQLITE_SEEDING = f"EXISTS (SELECT 1 FROM {SEED_WINDOW} WHERE closed_at IS NULL)"


def _sqlite_trigger(name: str, when: str, table: str, condition: str, message: str) -> str:
    where = f" WHEN {condition}" if condition else ""
    return (f"CREATE TRIGGER IF NOT EXISTS {name} {when} ON {table}{where} "
            f"BEGIN SELECT RAISE(ABORT, 'memoryhub: {message}'); END;")


def _sqlite_rules(table: str) -> list[tuple[str, str, str, str]]:
    """(trigger name suffix, timing and event, condition, message) per rule."""
    if table in APPEND_ONLY_TABLES:
        stamp = _STAMP[table]
        return [
            ("no_update", "BEFORE UPDATE", "", f"UPDATE on {table} is refused: this table is append-only"),
            ("no_delete", "BEFORE DELETE", "", f"DELETE on {table} is refused: this table is append-only"),
            ("no_backdating", "BEFORE INSERT", f"NEW.{stamp} < {_SQLITE_TOO_OLD} AND NOT {_SQLITE_SEEDING}",
             f"INSERT on {table} is refused: {stamp} is back-dated"),
        ]
    if table == PROPOSAL:
        fixed = " OR ".join(f"NEW.{c} IS NOT OLD.{c}" for c in PROPOSAL_FIXED)
        return [
            ("no_backdating", "BEFORE INSERT",
             f"(NEW.created_at < {_SQLITE_TOO_OLD} OR NEW.decided_at < {_SQLITE_TOO_OLD}) AND NOT {_SQLITE_SEEDING}",
             f"INSERT on {table} is refused: the proposal is back-dated"),
            ("decided_is_final", "BEFORE UPDATE", f"OLD.status NOT IN ({_sql_list(OPEN_PROPOSAL)})",
             f"UPDATE on {table} is refused: the proposal is already decided"),
            ("fixed_fields", "BEFORE UPDATE", fixed,
             f"UPDATE on {table} is refused: what a proposal says is fixed when it is made"),
            ("no_backdated_decision", "BEFORE UPDATE",
             f"NEW.status IN ({_sql_list(DECIDED_BY_A_PERSON)}) AND "
             f"(NEW.decided_at IS NULL OR (NEW.decided_at < {_SQLITE_TOO_OLD} AND NOT {_SQLITE_SEEDING}))",
             f"UPDATE on {table} is refused: the decision is back-dated"),
            ("no_delete", "BEFORE DELETE", f"OLD.status NOT IN ({_sql_list(OPEN_PROPOSAL)})",
             f"DELETE on {table} is refused: a decided proposal is kept"),
        ]
    if table == RUN:
        return [
            ("no_backdating", "BEFORE INSERT",
             f"(NEW.created_at < {_SQLITE_TOO_OLD} OR NEW.finished_at < {_SQLITE_TOO_OLD}) AND NOT {_SQLITE_SEEDING}",
             f"INSERT on {table} is refused: the run is back-dated"),
            ("finished_is_final", "BEFORE UPDATE", f"OLD.status NOT IN ({_sql_list(ACTIVE_RUN)})",
             f"UPDATE on {table} is refused: the run already finished"),
            ("no_backdated_finish", "BEFORE UPDATE",
             "NEW.created_at IS NOT OLD.created_at OR NEW.finished_at < OLD.created_at",
             f"UPDATE on {table} is refused: the run is back-dated"),
            ("no_delete", "BEFORE DELETE", f"OLD.status NOT IN ({_sql_list(ACTIVE_RUN)})",
             f"DELETE on {table} is refused: the run already finished"),
        ]
    # The served row. Without deferred triggers, the next version is refused
    # unless the row still equals its latest history row (tampering shows at
    # the next write), besides the immediate rules PostgreSQL also has.
    latest = (f"(SELECT h.history_id FROM {HISTORY} h WHERE h.id = OLD.id ORDER BY h.history_id DESC LIMIT 1)")
    return [
        ("no_delete", "BEFORE DELETE", "",
         f"DELETE on {table} is refused: an absent file is empty content, a new version"),
        ("identity", "BEFORE UPDATE",
         "NEW.id IS NOT OLD.id OR NEW.agent_id IS NOT OLD.agent_id OR NEW.user_ref IS NOT OLD.user_ref "
         "OR NEW.kind IS NOT OLD.kind",
         f"UPDATE on {table} is refused: a file never changes whose file it is"),
        ("version_order", "BEFORE UPDATE",
         "NEW.version NOT IN (OLD.version, OLD.version + 1) "
         "OR (NEW.content IS NOT OLD.content AND NEW.version = OLD.version)",
         f"UPDATE on {table} is refused: content changes only as the next version"),
        ("matches_history", "BEFORE UPDATE",
         f"NEW.version IS NOT OLD.version AND NOT EXISTS (SELECT 1 FROM {HISTORY} h "
         f"WHERE h.history_id = {latest} AND h.version = OLD.version AND h.content = OLD.content)",
         f"UPDATE on {table} is refused: the served row does not match its latest history row"),
    ]


def _sqlite_column_ok(column: str, rule: str) -> str:
    new, old = f"NEW.{column}", f"OLD.{column}"
    if rule == TEXT:
        return f"({new} IS {old} OR {_sqlite_is_tombstone(new)})"
    if rule == PSEUDONYM:
        return f"({new} IS {old} OR {_sqlite_is_pseudonym(new)})"
    if rule == STAMP:
        return f"{new} IS NOT NULL"
    if rule == DETAILS:
        redacted = f"json_extract({new}, '$.redacted')"
        return (f"({new} IS {old} OR (json_valid({new}) AND json_type({new}) = 'object' "
                f"AND (SELECT count(*) FROM json_each({new})) = 1 "
                f"AND {_sqlite_is_tombstone(redacted)}))")
    if rule == RATIONALE:
        return (f"({new} IS {old} OR (json_valid({new}) AND json_type({new}) = 'array' AND NOT EXISTS ("
                f"SELECT 1 FROM json_each({new}) AS r WHERE r.type <> 'object') AND NOT EXISTS ("
                f"SELECT 1 FROM json_each({new}) AS r, json_each(r.value) AS kv "
                "WHERE kv.key NOT IN ('kind', 'evidence') AND "
                f"(kv.type <> 'text' OR NOT {_sqlite_is_tombstone('kv.value')}))))")
    if rule == NO_FINDINGS:
        return f"({new} IS {old} OR (json_valid({new}) AND json_array_length({new}) = 0))"
    raise ValueError(rule)


def _sqlite_redaction(table: str, columns: list[str]) -> str:
    """True for exactly a redaction UPDATE: the flag row exists, the other
    columns are unchanged, each redactable one is unchanged or a tombstone."""
    rules = REDACTABLE[table]
    fixed = [f"NEW.{c} IS OLD.{c}" for c in columns if c not in rules]
    checks = [_sqlite_column_ok(c, rule) for c, rule in rules.items() if c in columns]
    return " AND ".join([f"EXISTS (SELECT 1 FROM {SQLITE_FLAG_TABLE})", *fixed, *checks])


def _sqlite_install(table: str, columns: list[str] | None = None) -> list[str]:
    statements = []
    for suffix, when, condition, message in _sqlite_rules(table):
        if when == "BEFORE UPDATE" and columns and table in REDACTABLE:
            allowed = _sqlite_redaction(table, columns)
            condition = f"NOT ({allowed})" + (f" AND ({condition})" if condition else "")
        statements.append(f"DROP TRIGGER IF EXISTS {table}_{suffix};")
        statements.append(_sqlite_trigger(f"{table}_{suffix}", when, table, condition, message))
    return statements


_SQLITE_FLAG = (f"CREATE TABLE IF NOT EXISTS {SQLITE_FLAG_TABLE} "
                "(id INTEGER PRIMARY KEY CHECK (id = 1));")


def _sqlite_uninstall(table: str) -> list[str]:
    return [f"DROP TRIGGER IF EXISTS {table}_{suffix};" for suffix, *_ in _sqlite_rules(table)]


# --- the seeding window ----------------------------------------------------------------

_EMPTY = f"""NOT EXISTS (SELECT 1 FROM {AUDIT}) AND NOT EXISTS (SELECT 1 FROM {PROPOSAL})
        AND NOT EXISTS (SELECT 1 FROM {LOG}) AND NOT EXISTS (SELECT 1 FROM {HISTORY})"""

_WINDOW_ONCE = f"INSERT on {SEED_WINDOW} is refused: seeding opens once, on an empty database"
_PG_WINDOW = [
    f"""CREATE TABLE IF NOT EXISTS {SEED_WINDOW} (
        id integer PRIMARY KEY CHECK (id = 1),
        opened_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        closed_at timestamptz,
        note text NOT NULL DEFAULT '')""",
    f"""
CREATE OR REPLACE FUNCTION memoryhub_guard_{SEED_WINDOW}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.closed_at IS NOT NULL OR NEW.opened_at < {_PG_TOO_OLD} OR NOT ({_EMPTY}) THEN
            {_PG_REFUSE.format(message=_WINDOW_ONCE)};
        END IF;
        RETURN NEW;
    END IF;
    IF TG_OP = 'DELETE' OR OLD.closed_at IS NOT NULL OR NEW.closed_at IS NULL
       OR (NEW.id, NEW.opened_at, NEW.note) IS DISTINCT FROM (OLD.id, OLD.opened_at, OLD.note) THEN
        RAISE EXCEPTION 'memoryhub: % on {SEED_WINDOW} is refused: a seeding window is only ever closed', TG_OP
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END;
$$;
""",
    f"DROP TRIGGER IF EXISTS {SEED_WINDOW}_guard ON {SEED_WINDOW};",
    f"CREATE TRIGGER {SEED_WINDOW}_guard BEFORE INSERT OR UPDATE OR DELETE ON {SEED_WINDOW} "
    f"FOR EACH ROW EXECUTE FUNCTION memoryhub_guard_{SEED_WINDOW}();",
    f"DROP TRIGGER IF EXISTS {SEED_WINDOW}_no_truncate ON {SEED_WINDOW};",
    f"CREATE TRIGGER {SEED_WINDOW}_no_truncate BEFORE TRUNCATE ON {SEED_WINDOW} "
    "FOR EACH STATEMENT EXECUTE FUNCTION memoryhub_refuse_truncate();",
]

_SQLITE_WINDOW_RULES = [
    ("once", "BEFORE INSERT", f"NEW.closed_at IS NOT NULL OR NOT ({_EMPTY})",
     _WINDOW_ONCE),
    ("close_only", "BEFORE UPDATE",
     "OLD.closed_at IS NOT NULL OR NEW.closed_at IS NULL OR NEW.id IS NOT OLD.id "
     "OR NEW.opened_at IS NOT OLD.opened_at OR NEW.note IS NOT OLD.note",
     f"UPDATE on {SEED_WINDOW} is refused: a seeding window is only ever closed"),
    ("no_delete", "BEFORE DELETE", "", f"DELETE on {SEED_WINDOW} is refused: a seeding window is kept"),
]
_SQLITE_WINDOW = [
    f"""CREATE TABLE IF NOT EXISTS {SEED_WINDOW} (
        id integer PRIMARY KEY CHECK (id = 1),
        opened_at text NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
        closed_at text,
        note text NOT NULL DEFAULT '')""",
    *(_sqlite_trigger(f"{SEED_WINDOW}_{suffix}", when, SEED_WINDOW, condition, message)
      for suffix, when, condition, message in _SQLITE_WINDOW_RULES),
]


def open_seed_window(connection: BaseDatabaseWrapper, note: str) -> bool:
    """Open the one seeding window, inside the caller's transaction; False
    when the database refuses (not empty, or a window was opened before)."""
    try:
        with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
            cursor.execute(f"INSERT INTO {SEED_WINDOW} (id, note) VALUES (1, %s)", [note])
    except DatabaseError:
        return False
    return True


def database_is_empty(connection: BaseDatabaseWrapper) -> bool:
    """The condition under which the database accepts a seeding window."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT CASE WHEN {_EMPTY} THEN 1 ELSE 0 END")
        return bool(cursor.fetchone()[0])


def may_open_seed_window(connection: BaseDatabaseWrapper) -> bool:
    """Whether the connected role may insert the window row at all: on
    PostgreSQL only the tables' owner may (memoryhub.db_roles)."""
    if connection.vendor != "postgresql":
        return True
    with connection.cursor() as cursor:
        cursor.execute("SELECT has_table_privilege(current_user, %s, 'INSERT')", [SEED_WINDOW])
        return bool(cursor.fetchone()[0])


def close_seed_window(connection: BaseDatabaseWrapper) -> None:
    now = "clock_timestamp()" if connection.vendor == "postgresql" else "strftime('%Y-%m-%d %H:%M:%f', 'now')"
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {SEED_WINDOW} SET closed_at = {now} WHERE id = 1 AND closed_at IS NULL")


def seed_window(connection: BaseDatabaseWrapper) -> tuple[object, object, str] | None:
    """(opened_at, closed_at, note) of the seeding window, if one was ever opened."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT opened_at, closed_at, note FROM {SEED_WINDOW} WHERE id = 1")
        row = cursor.fetchone()
    return (row[0], row[1], row[2]) if row else None


# --- install / uninstall -------------------------------------------------------------


def _present(connection: BaseDatabaseWrapper, tables: tuple[str, ...]) -> list[str]:
    """Those of `tables` that exist yet (consolidation's may come later)."""
    with connection.cursor() as cursor:
        existing = set(connection.introspection.table_names(cursor))
    return [table for table in tables if table in existing]


def install_sql(vendor: str, tables: tuple[str, ...] | list[str] = GUARDED_TABLES,
                columns: dict[str, list[str]] | None = None, schema: str = "public") -> list[str]:
    if vendor == "postgresql":
        return [*_PG_LEGACY, _PG_REFUSE_TRUNCATE, *_PG_WINDOW,
                *(sql for table in tables for sql in _pg_install(table)), _pg_redact_function(schema)]
    if vendor == "sqlite":
        columns = columns or {}
        return [_SQLITE_FLAG, *_SQLITE_WINDOW,
                *(sql for table in tables for sql in _sqlite_install(table, columns.get(table)))]
    return []


def uninstall_sql(vendor: str, tables: tuple[str, ...] | list[str] = GUARDED_TABLES) -> list[str]:
    if vendor == "postgresql":
        statements = list(_PG_LEGACY)
        for table in tables:
            statements += [f"DROP TRIGGER IF EXISTS {table}_guard ON {table};",
                           f"DROP TRIGGER IF EXISTS {table}_no_truncate ON {table};"]
            if table == SERVED:
                statements.append(f"DROP TRIGGER IF EXISTS {SERVED}_matches_history ON {SERVED};")
        return [*statements, f"DROP TRIGGER IF EXISTS {SEED_WINDOW}_guard ON {SEED_WINDOW};",
                f"DROP TRIGGER IF EXISTS {SEED_WINDOW}_no_truncate ON {SEED_WINDOW};"]
    if vendor == "sqlite":
        return [*(f"DROP TRIGGER IF EXISTS {SEED_WINDOW}_{suffix};" for suffix, *_ in _SQLITE_WINDOW_RULES),
                *(sql for table in tables for sql in _sqlite_uninstall(table))]
    return []


def install(connection: BaseDatabaseWrapper, tables: tuple[str, ...] = GUARDED_TABLES) -> None:
    tables_present = _present(connection, tables)
    with connection.cursor() as cursor:
        columns = {table: [c.name for c in connection.introspection.get_table_description(cursor, table)]
                   for table in tables_present}
        schema = "public"
        if connection.vendor == "postgresql":
            cursor.execute("SELECT current_schema()")
            schema = cursor.fetchone()[0]
        statements = install_sql(connection.vendor, tables_present, columns, schema)
        if connection.vendor == "sqlite" and getattr(connection, "memoryhub_migrating", False):
            # The window's INSERT rule reads other tables, and SQLite refuses to
            # rebuild a table (ALTER in a migration) that another table's trigger
            # names: during migrate it is left out, and post_migrate adds it.
            statements = [sql for sql in statements if SEED_WINDOW + "_" not in sql]
        for sql in statements:
            cursor.execute(sql)


def begin_migrating(connection: Any) -> None:
    """Before migrate (pre_migrate): on SQLite, drop the window's triggers
    until post_migrate installs everything again."""
    connection.memoryhub_migrating = True
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            for suffix, *_ in _SQLITE_WINDOW_RULES:
                cursor.execute(f"DROP TRIGGER IF EXISTS {SEED_WINDOW}_{suffix};")


def end_migrating(connection: Any) -> None:
    connection.memoryhub_migrating = False


def uninstall(connection: BaseDatabaseWrapper, tables: tuple[str, ...] = GUARDED_TABLES) -> None:
    tables_present = _present(connection, tables)
    with connection.cursor() as cursor:
        for sql in uninstall_sql(connection.vendor, tables_present):
            cursor.execute(sql)
