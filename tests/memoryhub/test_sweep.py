"""The erasure's one table (memoryhub.services.sweep): every text, char or
JSON column of every model Django knows is either swept or declared
subject-free with a reason, and the swept columns of guarded tables are
exactly what the database lets a redaction change."""

from __future__ import annotations

import pytest
from django.apps import apps

from memoryhub import immutability
from memoryhub.models import Workspace
from memoryhub.services import redaction, sweep


def _all_models():
    return apps.get_models(include_auto_created=True)


def test_it_walks_every_app_and_the_history_models():
    labels = {model._meta.label for model in _all_models()}
    assert {"memoryhub.HistoricalMemoryFile", "consolidation.ConsolidationRun", "notifications.WebhookDelivery",
            "reviews.OIDCIdentity", "axes.AccessAttempt", "admin.LogEntry", "sessions.Session"} <= labels


def test_every_text_column_of_every_model_is_swept_or_declared_subject_free():
    missing = sweep.unlisted_columns(_all_models())
    assert missing == [], (
        "These columns can hold text, but the erasure neither sweeps them nor declares them subject-free: add each "
        f"to a Sweep row or to declare_subject_free() with its reason (memoryhub/services/sweep.py): {missing}")


def test_the_check_names_a_column_nobody_listed(monkeypatch):
    free = {label: dict(columns) for label, columns in sweep.SUBJECT_FREE.items()}
    del free["memoryhub.Agent"]["description"]
    monkeypatch.setattr(sweep, "SUBJECT_FREE", free)
    assert sweep.unlisted_columns(_all_models()) == ["memoryhub.Agent.description"]
    rows = [s for s in sweep.sweeps() if s.model != "memoryhub.LogEntry"]
    monkeypatch.setattr(sweep, "_SWEEPS", rows)
    assert {"memoryhub.LogEntry.content", "memoryhub.LogEntry.user_ref"} <= set(sweep.unlisted_columns(_all_models()))


def test_every_listed_column_exists_and_is_listed_once():
    swept = {(s.model, column) for s in sweep.sweeps() for column in s.columns}
    free = {(label, column) for label, columns in sweep.SUBJECT_FREE.items() for column in columns}
    assert not swept & free
    for label, column in swept | free:
        assert column in sweep.text_columns(apps.get_model(label)), f"{label}.{column} is not a text column"
    assert all(reason.strip() for columns in sweep.SUBJECT_FREE.values() for reason in columns.values())


def test_guarded_tables_are_swept_through_redaction_and_only_in_columns_the_guards_allow():
    guarded = {s.model: s for s in sweep.sweeps() if s.redaction}
    assert set(guarded) == {"memoryhub.HistoricalMemoryFile", "memoryhub.MemoryFile", "memoryhub.Proposal",
                            "memoryhub.LogEntry", "memoryhub.AuditEvent", "consolidation.ConsolidationRun"}
    for label, row in guarded.items():
        table = redaction.TARGETS[row.redaction][0]
        assert apps.get_model(label)._meta.db_table == table
        allowed = immutability.REDACTABLE[table]
        cleared = {column for column, how in row.columns.items() if how != sweep.EMPTIED}
        assert cleared <= set(allowed), f"{label}: the guard refuses {cleared - set(allowed)}"
        # And nothing the guard lets a redaction change is forgotten.
        assert set(allowed) - {"redacted_at", "redacted_by"} == cleared, label


@pytest.mark.parametrize(("ref", "text", "named"), [
    ("alice", "Customer alice asked to be forgotten", True),
    ("alice", "malice aforethought", False),
    ("cust-1", "see cust-12", False),
    ("cust-1", "next=/agents/a/files/USER.md/history/?user=cust-1", True),
    ("1042", "Approved proposal #1042", False),
    ("1042", "customer 1042 called", True),
    ("José", "José called", True),
    ("42", "customer 42 called", False),  # too short to look for outside its own rows
    ("a", "Erase a data subject", False),
])
def test_free_text_names_the_reference_only_as_a_whole_token(ref, text, named):
    scope = sweep.Scope(workspace=Workspace(slug="w"), user_ref=ref)
    assert scope.names(text) is named
    assert scope.names({"details": [text]}) is named


def test_rows_recorded_under_a_short_reference_are_still_searched_for_it():
    scope = sweep.Scope(workspace=Workspace(slug="w"), user_ref="42")
    assert scope.holds("Serve USER.md v3 of bot again for 42")
    assert scope.names("reason: 42 asked", short=True)
