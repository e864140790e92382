"""`/metrics` in the Prometheus text format (prometheus-client).

Two kinds of figures:

- what the database knows (queue, decisions, runs, spend, file sizes,
  staleness, duplicates merged, scanner findings) is computed at each scrape
  by `DatabaseCollector` from a fixed handful of aggregate queries — the
  number of queries does not grow with agents, proposals or runs — so every
  web process answers the same and nothing is lost on a restart;
- what only a process sees (request latency, scanner refusals) is recorded
  in process: a histogram labelled by the resolved URL *name*, never the raw
  path, so a scanner probing random URLs cannot blow up the label set. Under
  several worker processes set PROMETHEUS_MULTIPROC_DIR (prometheus-client's
  multiprocess mode) and every process's samples are summed at the scrape.

Access: `Authorization: Bearer <MEMORYHUB_METRICS_TOKEN>` (the scraper; all
workspaces) or an admin's personal token (that admin's workspaces only).
memoryhub imports no other app: consolidation's run model is looked up by name.
"""

from __future__ import annotations

import hmac
import os
import re
import time
from collections import Counter as Tally
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Any

from django.apps import apps
from django.conf import settings
from django.db.models import Count, DurationField, ExpressionWrapper, F, IntegerField, Max, Q, Sum
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Length
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric, SummaryMetricFamily
from prometheus_client.registry import Collector

from memoryhub.models import (
    Agent,
    FileKind,
    MemoryFile,
    Proposal,
    ProposalStatus,
    Workspace,
)

MULTIPROCESS = bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))
# In multiprocess mode the samples live in files, gathered at the scrape.
PROCESS_REGISTRY: CollectorRegistry | None = None if MULTIPROCESS else CollectorRegistry()

REQUEST_SECONDS = Histogram(
    "memoryhub_http_request_duration_seconds",
    "Time to answer an HTTP request, by route name, method and status class.",
    ["route", "method", "status"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
    registry=PROCESS_REGISTRY,
)
SCANNER_REFUSALS = Counter(
    "memoryhub_scanner_refusals",
    "Writes and proposals the memory scanner refused in this process, by rule.",
    ["rule"],
    registry=PROCESS_REGISTRY,
)
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
NEAR_CAP_PERCENT = 80
DEFAULT_SLA_HOURS = 24


def count_refusal(rule: str) -> None:
    # Rule names come from the scanner's fixed list, so the label set is bounded.
    SCANNER_REFUSALS.labels(rule=rule or "unknown").inc()


class MetricsMiddleware:
    """Times every request; labels by the route's name (`api-proposal`),
    the view's dotted name if it has none, or `unmatched`."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        route = (match.url_name or match.view_name or "unnamed") if match else "unmatched"
        method = request.method if request.method in _METHODS else "OTHER"
        REQUEST_SECONDS.labels(route=route, method=method, status=f"{response.status_code // 100}xx").observe(
            time.perf_counter() - started)
        return response


# --- the database figures ------------------------------------------------------------------

_LIMIT_FIELDS = {kind: f"limit_{kind.removesuffix('.md').lower()}" for kind in FileKind.values}
_SCANNER_RULE = re.compile(r"fails the memory scanner \(([^)]{1,64})\)")


def _limit_expression() -> object:
    from django.db.models import Case, When

    return Case(*[When(kind=kind, then=F(f"agent__{field}")) for kind, field in _LIMIT_FIELDS.items()],
                output_field=IntegerField())


def _seconds(value: Any) -> float:
    if value is None:
        return 0.0
    if isinstance(value, timedelta):
        return value.total_seconds()
    return float(value) / 1_000_000  # SQLite sums durations as microseconds


class DatabaseCollector(Collector):
    """Gauges and counters from aggregate queries, computed at each scrape.
    `workspace_ids` limits them to those workspaces (None: all)."""

    def __init__(self, workspace_ids: list[int] | None = None) -> None:
        self.workspace_ids = workspace_ids

    def _scope(self, queryset: Any, path: str) -> Any:
        if self.workspace_ids is None:
            return queryset
        return queryset.filter(**{f"{path}__in": self.workspace_ids})

    def collect(self) -> Iterator[Metric]:
        now = timezone.now()
        yield from self._proposals(now)
        yield from self._files(now)
        runs = apps.get_model("consolidation", "ConsolidationRun") if apps.is_installed("consolidation") else None
        if runs is not None:
            yield from self._runs(runs)
        yield from self._scanner(runs)

    def _proposals(self, now: datetime) -> Iterator[Metric]:
        proposals = self._scope(Proposal.objects.all(), "agent__workspace_id")
        # The SLA is per workspace once workspaces carry one (sla_hours).
        if any(f.name == "sla_hours" for f in Workspace._meta.get_fields()):
            hours = set(self._scope(Workspace.objects.all(), "pk").values_list("sla_hours", flat=True))
            overdue = Q()
            for h in hours:
                overdue |= Q(agent__workspace__sla_hours=h, created_at__lt=now - timedelta(hours=h or
                                                                                              DEFAULT_SLA_HOURS))
        else:
            overdue = Q(created_at__lt=now - timedelta(hours=DEFAULT_SLA_HOURS))
        rows = (proposals.values("agent__workspace__slug", "status")
                .annotate(n=Count("id"), late=Count("id", filter=overdue)).order_by())
        pending = GaugeMetricFamily("memoryhub_proposals_pending", "Proposals waiting for a reviewer.",
                                    labels=["workspace"])
        late = GaugeMetricFamily("memoryhub_proposals_overdue", "Pending proposals older than the review SLA.",
                                 labels=["workspace"])
        by_status = GaugeMetricFamily("memoryhub_proposals", "Proposals by status.", labels=["workspace", "status"])
        decisions = CounterMetricFamily("memoryhub_decisions", "Proposals decided by a reviewer, by outcome.",
                                        labels=["workspace", "outcome"])
        for row in rows:
            ws, status = row["agent__workspace__slug"], row["status"]
            by_status.add_metric([ws, status], row["n"])
            if status == ProposalStatus.PENDING:
                pending.add_metric([ws], row["n"])
                late.add_metric([ws], row["late"])
            if status in (ProposalStatus.APPROVED, ProposalStatus.REJECTED):
                decisions.add_metric([ws, status], row["n"])
        yield from (pending, late, by_status, decisions)

    def _files(self, now: datetime) -> Iterator[Metric]:
        files = self._scope(MemoryFile.objects.exclude(content=""), "agent__workspace_id").annotate(
            chars=Length("content"), limit=_limit_expression())
        ttl_days = set(self._scope(Agent.objects.exclude(staleness_ttl_days=0), "workspace_id")
                       .values_list("staleness_ttl_days", flat=True))
        stale = Q(pk__in=[])
        for days in ttl_days:
            stale |= Q(agent__staleness_ttl_days=days, updated_at__lt=now - timedelta(days=days))
        rows = (files.values("agent__slug", "kind")
                .annotate(n=Count("id"), max_chars=Max("chars"), cap_chars=Max("limit"),
                          near=Count("id", filter=Q(chars__gt=F("limit") * NEAR_CAP_PERCENT / 100)),
                          over=Count("id", filter=Q(chars__gt=F("limit"))), stale=Count("id", filter=stale))
                .order_by())
        count = GaugeMetricFamily("memoryhub_files", "Memory files that exist.", labels=["agent", "file"])
        biggest = GaugeMetricFamily("memoryhub_file_max_chars", "The largest file of this kind, in characters.",
                                    labels=["agent", "file"])
        cap = GaugeMetricFamily("memoryhub_file_cap_chars", "The agent's cap for this kind of file.",
                                labels=["agent", "file"])
        near = GaugeMetricFamily("memoryhub_files_near_cap", f"Files above {NEAR_CAP_PERCENT}% of their cap.",
                                 labels=["agent", "file"])
        over = GaugeMetricFamily("memoryhub_files_over_cap", "Files above their cap (MEMORY.md's cap is soft).",
                                 labels=["agent", "file"])
        stale_files = GaugeMetricFamily("memoryhub_files_stale", "Files not changed within the agent's staleness "
                                        "TTL.", labels=["agent", "file"])
        for row in rows:
            labels = [row["agent__slug"], row["kind"]]
            count.add_metric(labels, row["n"])
            biggest.add_metric(labels, row["max_chars"] or 0)
            cap.add_metric(labels, row["cap_chars"] or 0)
            near.add_metric(labels, row["near"])
            over.add_metric(labels, row["over"])
            stale_files.add_metric(labels, row["stale"])
        yield from (count, biggest, cap, near, over, stale_files)

    def _runs(self, runs: Any) -> Iterator[Metric]:
        scoped = self._scope(runs.objects.all(), "agent__workspace_id")
        duration = ExpressionWrapper(F("finished_at") - F("started_at"), output_field=DurationField())
        rows = (scoped.values("agent__slug", "status")
                .annotate(n=Count("id"), tin=Sum("tokens_in"), tout=Sum("tokens_out"), cost=Sum("cost_usd"),
                          timed=Count("id", filter=Q(finished_at__isnull=False, started_at__isnull=False)),
                          seconds=Sum(duration, filter=Q(finished_at__isnull=False, started_at__isnull=False)),
                          merged=Sum(Cast(KT("counts__consolidate__by_kind__merge"), IntegerField())))
                .order_by())
        outcomes = CounterMetricFamily("memoryhub_consolidation_runs", "Consolidation runs by agent and outcome.",
                                       labels=["agent", "status"])
        took = SummaryMetricFamily("memoryhub_consolidation_run_duration_seconds",
                                   "Time from claim to finish of finished runs.", labels=["agent", "status"])
        tokens = CounterMetricFamily("memoryhub_consolidation_tokens", "Model tokens used by consolidation.",
                                     labels=["agent", "direction"])
        cost = CounterMetricFamily("memoryhub_consolidation_cost_usd", "Consolidation spend in USD.",
                                   labels=["agent"])
        duplicates = CounterMetricFamily("memoryhub_duplicate_entries_merged",
                                         "Duplicate entries consolidation found and merged.", labels=["agent"])
        spend: dict[str, list[float]] = {}
        for row in rows:
            agent = row["agent__slug"]
            outcomes.add_metric([agent, row["status"]], row["n"])
            if row["timed"]:
                took.add_metric([agent, row["status"]], count_value=row["timed"], sum_value=_seconds(row["seconds"]))
            totals = spend.setdefault(agent, [0, 0, 0, 0])
            totals[0] += row["tin"] or 0
            totals[1] += row["tout"] or 0
            totals[2] += float(row["cost"] or 0)
            totals[3] += row["merged"] or 0
        for agent, (tin, tout, usd, merged) in spend.items():
            tokens.add_metric([agent, "in"], tin)
            tokens.add_metric([agent, "out"], tout)
            cost.add_metric([agent], usd)
            duplicates.add_metric([agent], merged)
        yield from (outcomes, took, tokens, cost, duplicates)

    def _scanner(self, runs: Any) -> Iterator[Metric]:
        """Findings the database keeps: personal data flagged on proposals
        (the `flag` policy) and consolidation output refused by the scanner.
        Refused agent writes store nothing; the process counter counts them."""
        found: Tally[tuple[str, str]] = Tally()
        flagged = self._scope(Proposal.objects.exclude(pii=[]), "agent__workspace_id").values_list("pii", flat=True)
        for findings in flagged.iterator():
            for finding in findings or []:
                found[("proposal_pii", str(finding.get("rule", "unknown"))[:64])] += 1
        if runs is not None:
            errors = (self._scope(runs.objects.filter(counts__prune__guard="scanner"), "agent__workspace_id")
                      .values_list("error", flat=True))
            for error in errors.iterator():
                match = _SCANNER_RULE.search(error or "")
                found[("consolidation", match.group(1) if match else "unknown")] += 1
        family = CounterMetricFamily("memoryhub_scanner_findings", "Scanner findings kept in the database, by "
                                     "where and rule.", labels=["source", "rule"])
        for (source, rule), n in sorted(found.items()):
            family.add_metric([source, rule], n)
        yield family


# --- the endpoint --------------------------------------------------------------------------


def _refuse(status: int, code: str, detail: str) -> JsonResponse:
    response = JsonResponse({"error": {"code": code, "detail": detail}}, status=status)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="memoryhub-metrics"'
    return response


def scrape_scope(request: HttpRequest) -> list[int] | None | JsonResponse:
    """None for the scraper's token (all workspaces), the admin's workspace
    ids for an admin's token, or the refusal to send."""
    from memoryhub import services

    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return _refuse(401, "not_authenticated", "Send 'Authorization: Bearer <metrics token or admin token>'.")
    configured = getattr(settings, "MEMORYHUB_METRICS_TOKEN", "")
    if configured and hmac.compare_digest(token.encode(), configured.encode()):
        return None
    found = services.user_for_token(token)
    if found is None:
        return _refuse(401, "not_authenticated", "This token is unknown or has been revoked.")
    ids = services.workspace_ids_for(found[0], services.ADMIN_ROLES)
    if not ids:
        return _refuse(403, "permission_denied", "Only an admin's token (or the metrics token) may read metrics.")
    return ids


def metrics_view(request: HttpRequest) -> HttpResponse:
    if request.method not in ("GET", "HEAD"):
        return _refuse(405, "method_not_allowed", "Use GET.")
    scope = scrape_scope(request)
    if isinstance(scope, JsonResponse):
        return scope
    registry = CollectorRegistry()
    if MULTIPROCESS:
        from prometheus_client import multiprocess

        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    else:
        assert PROCESS_REGISTRY is not None
        for collector in (REQUEST_SECONDS, SCANNER_REFUSALS):
            registry.register(collector)
    registry.register(DatabaseCollector(scope))
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
