"""The dashboard (`dashboard/`): queue and decision figures, consolidation
runs, tokens and spend, files near their cap, trends.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone
from django.views.decorators.http import require_GET

from consolidation import services as consolidation
from memoryhub import selectors, services
from memoryhub.models import AGENT_SCOPED, ProposalStatus
from reviews import charts
from reviews.http import HtmxHttpRequest

DASHBOARD_DAYS = 14


def _day_labels(days: list[date]) -> list[str]:
    return [d.strftime("%b %d") for d in days]


@login_required
@require_GET
def dashboard(request: HtmxHttpRequest) -> HttpResponse:
    workspace_ids = services.workspace_ids_for(request.user)
    if not workspace_ids:
        raise PermissionDenied("You have no role in any workspace.")
    now = timezone.now()
    today = timezone.localdate()
    days = [today - timedelta(days=DASHBOARD_DAYS - 1 - i) for i in range(DASHBOARD_DAYS)]
    since = now - timedelta(days=DASHBOARD_DAYS)
    runs_by_status, spend = consolidation.run_figures(workspace_ids, since=since)
    figures = selectors.dashboard(workspace_ids, since=since, runs_by_status=runs_by_status, spend=spend)
    per_day = figures.decided
    decisions_chart = charts.bar_chart(
        title=f"Decisions per day, last {DASHBOARD_DAYS} days",
        labels=_day_labels(days),
        series=[
            charts.Series("Approved", [per_day.get((d, ProposalStatus.APPROVED), 0) for d in days], "#009E73"),
            charts.Series("Rejected", [per_day.get((d, ProposalStatus.REJECTED), 0) for d in days], "#D55E00"),
        ],
        empty_message="No decisions yet",
    ) if per_day else charts.bar_chart(title="Decisions per day", labels=[], series=[],
                                       empty_message="No decisions in the last 14 days")

    runs_chart = tokens_chart = cost_chart = None
    if figures.run_total:
        by_status = figures.runs_by_status or {}
        spend = figures.spend
        runs_chart = charts.bar_chart(
            title="Consolidation runs by outcome",
            labels=[s.replace("_", " ") for s in selectors.RUN_STATUSES],
            series=[charts.Series("Runs", [by_status.get(s, 0) for s in selectors.RUN_STATUSES])],
        )
        tokens_chart = charts.line_chart(
            title="Consolidation tokens per day",
            labels=_day_labels(days),
            series=[
                charts.Series("Tokens in", [spend[d]["tin"] or 0 if d in spend else 0 for d in days]),
                charts.Series("Tokens out", [spend[d]["tout"] or 0 if d in spend else 0 for d in days]),
            ],
            unit="tokens",
        )
        cost_chart = charts.bar_chart(
            title="Consolidation cost per day",
            labels=_day_labels(days),
            series=[charts.Series("Cost", [float(spend[d]["cost"] or 0) if d in spend else 0 for d in days])],
            unit="USD",
        )

    trends = _trend_charts(workspace_ids, days, since=now - timedelta(days=DASHBOARD_DAYS), now=now)
    agents_qs = services.visible_agents(request.user)
    near = list(selectors.near_cap_files(agents_qs)[:50])
    for row in near:
        row.percent = round(100 * row.chars / row.cap) if row.cap else 0  # type: ignore[attr-defined]
    stale = list(selectors.stale_files(agents_qs, now)[:50])
    return TemplateResponse(
        request,
        "reviews/admin/dashboard.html",
        {
            "queue": {"size": figures.queue_size, "oldest": figures.oldest},
            "oldest_age": (now - figures.oldest) if figures.oldest else None,
            "stale_count": figures.stale_count,
            "overdue": figures.overdue,
            "due": figures.due,
            "median_decision": figures.median_decision,
            "decisions_timed": figures.decisions_timed,
            "decisions_chart": decisions_chart,
            "runs_chart": runs_chart,
            "run_total": figures.run_total,
            "tokens_chart": tokens_chart,
            "cost_chart": cost_chart,
            "near_cap": near,
            "stale_files": stale,
            "near_cap_percent": selectors.NEAR_CAP_PERCENT,
            "agent_scoped": AGENT_SCOPED,
            "attention": list(consolidation.pairs_needing_attention(workspace_ids=workspace_ids)[:50]),
            "trends": trends,
        },
    )


# Agents drawn as their own line in "spend per agent per day"; the rest are summed.
SPEND_AGENTS = 6


def _trend_charts(workspace_ids: list[int], days: list[date], *, since: datetime, now: datetime) -> dict[str, object]:
    figures = selectors.trends(workspace_ids, since=since, now=now)
    labels = _day_labels(days)
    # A day without a new version keeps the size the files had.
    average: list[float] = []
    largest: list[float] = []
    for d in days:
        avg, top = figures.memory_size.get(d, (average[-1] if average else 0, largest[-1] if largest else 0))
        average.append(round(avg))
        largest.append(top)
    size_chart = charts.line_chart(
        title="MEMORY.md size, versions written per day",
        labels=labels,
        series=[charts.Series("Average", average), charts.Series("Largest", largest)],
        unit="chars",
    ) if figures.memory_size else None
    totals: dict[str, float] = {}
    for (slug, _day), usd in figures.spend.items():
        totals[slug] = totals.get(slug, 0.0) + usd
    shown = sorted(totals, key=lambda slug: (-totals[slug], slug))[:SPEND_AGENTS]
    series = [charts.Series(slug, [figures.spend.get((slug, d), 0.0) for d in days]) for slug in shown]
    others = [slug for slug in totals if slug not in shown]
    if others:
        series.append(charts.Series(f"{len(others)} other agents",
                                    [sum(figures.spend.get((slug, d), 0.0) for slug in others) for d in days]))
    spend_chart = charts.line_chart(title="Consolidation spend per agent per day", labels=labels, series=series,
                                    unit="USD") if series else None
    return {"figures": figures, "size_chart": size_chart, "spend_chart": spend_chart}
