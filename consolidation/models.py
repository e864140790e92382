"""Consolidation runs: the database, not the broker, is the truth about them.

A run is created QUEUED, claimed to RUNNING by a conditional UPDATE (with a
lease), and finished once. Rules that span models live in services.py.
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone


class RunStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded (proposals made)"
    NO_CHANGE = "no_change", "No change"
    FAILED = "failed", "Failed"
    SKIPPED = "skipped", "Skipped"


ACTIVE_STATUSES = (RunStatus.QUEUED, RunStatus.RUNNING)
# Runs whose high-water mark counts: the next run gathers after it.
CONSUMING_STATUSES = (RunStatus.SUCCEEDED, RunStatus.NO_CHANGE)


class Trigger(models.TextChoices):
    GATE = "gate", "Gate (scheduled)"
    MANUAL = "manual", "Manual"


class Failure(models.TextChoices):
    """Why a failed run failed, as far as the next run is concerned."""

    NONE = "", "—"
    # The model server timed out, rate-limited or failed (HTTP 429/5xx), or
    # the file changed during the run: trying again later may work.
    TRANSIENT = "transient", "Transient (retried with backoff)"
    # A guard refused the output, the server refused the request (HTTP 400),
    # the file cannot fit its cap: the same input fails the same way, so the
    # pair waits for a person or for something to change.
    PERMANENT = "permanent", "Permanent (needs attention)"


class ConsolidationRunQuerySet(models.QuerySet["ConsolidationRun"]):
    def for_pair(self, agent_id: int, user_ref: str) -> ConsolidationRunQuerySet:
        return self.filter(agent_id=agent_id, user_ref=user_ref)

    def active(self) -> ConsolidationRunQuerySet:
        return self.filter(status__in=ACTIVE_STATUSES)

    def consuming(self) -> ConsolidationRunQuerySet:
        return self.filter(status__in=CONSUMING_STATUSES)

    def in_workspaces(self, workspace_ids: list[int]) -> ConsolidationRunQuerySet:
        return self.filter(agent__workspace_id__in=workspace_ids)

    def started_since(self, moment: datetime) -> ConsolidationRunQuerySet:
        return self.filter(created_at__gte=moment)


class ConsolidationRun(models.Model):
    agent = models.ForeignKey("memoryhub.Agent", on_delete=models.PROTECT, related_name="consolidation_runs")
    user_ref = models.CharField(max_length=255)
    status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED)
    trigger = models.CharField(max_length=16, choices=Trigger.choices, default=Trigger.MANUAL)
    triggered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    backend = models.CharField(max_length=16)
    model = models.CharField(max_length=200, blank=True, default="")

    # The last LogEntry id this run consumed; the next run gathers after the
    # mark of the last succeeded or no-change run of the pair.
    high_water_mark = models.BigIntegerField(default=0)
    # Per phase: what was oriented, gathered, filtered (ids and rules, never
    # the text), changed and proposed.
    counts = models.JSONField(default=dict, blank=True)
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    error = models.TextField(blank=True, default="")
    failure = models.CharField(max_length=16, choices=Failure.choices, blank=True, default=Failure.NONE)
    # A transient failure's retry is not dispatched before this (the model
    # server's Retry-After, or the backoff): the sweep honours it too.
    retry_at = models.DateTimeField(null=True, blank=True)

    # Claims so far; also the fencing token that stops a presumed-dead
    # worker from finishing a run someone else has re-claimed.
    attempts = models.PositiveIntegerField(default=0)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    # When the run last entered QUEUED: the sweep re-dispatches a run queued
    # for longer than a lease (its broker message was lost).
    queued_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    proposals = models.ManyToManyField("memoryhub.Proposal", blank=True, related_name="consolidation_runs")

    objects = ConsolidationRunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            # One run per pair at a time is a database fact, not a check
            # that two triggers could both pass.
            models.UniqueConstraint(
                fields=["agent", "user_ref"],
                condition=Q(status__in=["queued", "running"]),
                name="consolidation_one_active_run_per_pair",
            ),
        ]
        indexes = [
            models.Index(fields=["agent", "user_ref", "created_at"], name="run_pair_created"),
            models.Index(fields=["agent", "created_at"], name="run_agent_created"),
            models.Index(fields=["status", "lease_expires_at"], name="run_status_lease"),
        ]

    def __str__(self) -> str:
        return f"Run #{self.pk} {self.agent_id}/{self.user_ref} ({self.status})"

    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE_STATUSES

    @property
    def is_finished(self) -> bool:
        return not self.is_active


class ConsolidationPairQuerySet(models.QuerySet["ConsolidationPair"]):
    def needing_attention(self) -> ConsolidationPairQuerySet:
        return self.filter(needs_attention=True)

    def in_workspaces(self, workspace_ids: list[int]) -> ConsolidationPairQuerySet:
        return self.filter(agent__workspace_id__in=workspace_ids)


class ConsolidationPair(models.Model):
    """What the gate and the console need to know about one (agent, user)
    pair across its runs: whether it waits for a person, and until when a
    transient failure holds it back. One row per pair that ever failed."""

    agent = models.ForeignKey("memoryhub.Agent", on_delete=models.PROTECT, related_name="consolidation_pairs")
    user_ref = models.CharField(max_length=255)

    needs_attention = models.BooleanField(default=False)
    # A machine code (backend_error, guard:<name>, worker_lost, transient_limit),
    # the run's reason for a person, and what would clear the state.
    attention_code = models.CharField(max_length=32, blank=True, default="")
    attention_reason = models.TextField(blank=True, default="")
    attention_clears_when = models.TextField(blank=True, default="")
    attention_since = models.DateTimeField(null=True, blank=True)
    attention_run = models.ForeignKey(
        ConsolidationRun, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )

    # Transient failures in a row, and when the gate may try the pair again.
    transient_failures = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)

    cleared_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    cleared_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    objects = ConsolidationPairQuerySet.as_manager()

    class Meta:
        ordering = ["-attention_since", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["agent", "user_ref"], name="consolidation_pair_unique"),
        ]
        indexes = [models.Index(fields=["needs_attention", "attention_since"], name="pair_attention")]

    def __str__(self) -> str:
        state = "needs attention" if self.needs_attention else "ok"
        return f"Pair {self.agent_id}/{self.user_ref} ({state})"
