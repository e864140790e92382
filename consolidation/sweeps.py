"""Consolidation's rows of the erasure sweep (memoryhub.services.sweep):
registered from ConsolidationConfig.ready(), so memoryhub never imports
this app.

A run's error text may quote what it read (a guard's reason, a model's
refusal); a pair's attention text is the run's reason again. Runs are
guarded (finished runs are frozen), so their text goes through the
redaction path; pairs are plain rows."""

from __future__ import annotations

from django.db.models import Model, QuerySet

from memoryhub.services import sweep


def _runs(scope: sweep.Scope) -> QuerySet[Model]:
    from consolidation.models import ConsolidationRun

    return ConsolidationRun.objects.filter(agent_id__in=scope.agent_ids, user_ref=scope.user_ref)


def _pairs(scope: sweep.Scope) -> QuerySet[Model]:
    from consolidation.models import ConsolidationPair

    return ConsolidationPair.objects.filter(agent_id__in=scope.agent_ids, user_ref=scope.user_ref)


def register() -> None:
    sweep.register(
        sweep.Sweep("consolidation.ConsolidationRun", {"error": sweep.TOMBSTONE, "user_ref": sweep.PSEUDONYM},
                    _runs, "runs", redaction="run"),
        sweep.Sweep("consolidation.ConsolidationPair",
                    {"user_ref": sweep.PSEUDONYM, "attention_reason": sweep.CLEARED,
                     "attention_clears_when": sweep.CLEARED},
                    _pairs, "pairs"),
    )
    sweep.declare_subject_free("consolidation.ConsolidationRun", {
        "status": "a value from a fixed list", "trigger": "a value from a fixed list",
        "backend": "a value from a fixed list", "model": "the configured model's name",
        "failure": "a value from a fixed list",
        "counts": "per phase, ids and rule names only, never the text (consolidation.models)"})
    sweep.declare_subject_free("consolidation.ConsolidationPair", {"attention_code": "a machine code"})
