"""Fourteen days of demo use, so the dashboard, the timelines and /metrics
show something on first start: sessions with logs, consolidation runs with
tokens and cost (succeeded, no change, failed), and the reviewers'
decisions on their proposals (approved and rejected).

Honest about time. The database refuses back-dated rows
(memoryhub.immutability), and this does not weaken that: everything here is
written in ONE transaction that first opens the seeding window — which the
database allows only on an empty database and only once — and closes it
before committing. On any later run (or a database that already holds data)
the window cannot open and no history is added; the window row stays as the
record of when the demo history was written (docs/operations.md, "Demo data").

The timestamps come from a demo clock: `django.utils.timezone.now` answers
the moment being seeded, so every row — audit event, history row, decision —
is stamped by the same code that stamps real ones, at that moment. The clock
is set only inside this module's seeding transaction.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import django.utils.timezone as django_timezone
from django.apps import apps
from django.conf import settings

from memoryhub import services
from memoryhub.models import Agent, FileKind, Proposal, ProposalStatus, Source

HISTORY_DAYS = 14

# Two end users per agent, kept apart from the users of the hand-written
# demo files, so the seeded pending proposals still apply to what they expect.
PAIRS = {
    "support-bot": ("cust-2001", "cust-2002"),
    "kyc-analyst": ("officer-jnoor", "officer-pdiaz"),
    "legal-researcher": ("counsel-mweber", "counsel-sokafor"),
}
FACTS = {
    "support-bot": (
        "Prefers e-mail over phone calls.", "Works night shifts; calls back after 14:00 are best.",
        "Uses the mobile app rather than desktop online banking.", "Asked to stop paper statements.",
        "Shares a joint account with a partner.", "Travels to Spain every spring; set a travel notice.",
        "Wants card alerts for payments over 200 EUR.", "Prefers short answers with a summary first.",
        "Is saving for a flat; asked about the fixed-rate saver.", "Reads messages in Portuguese more easily.",
        "Had a disputed card payment resolved in November.", "Asked for large-print letters.",
        "Wants Friday reminders for direct debits.", "Closed the old instant-access account.",
    ),
    "kyc-analyst": (
        "Escalates PEP matches to the second line within one day.", "Wants source-of-funds notes in bullet form.",
        "Reviews corporate files on Tuesdays.", "Asks for the adverse-media search date in every summary.",
        "Prefers the risk rating before the narrative.", "Handles the DACH corporate portfolio.",
        "Wants expired ID documents flagged first.", "Uses the 2026 EDD checklist.",
        "Asks for ownership charts above three layers.", "Wants sanctions hits quoted with list and date.",
        "Signs off periodic reviews on the last Friday of the month.", "Prefers English for case notes.",
        "Needs a second reviewer for high-risk jurisdictions.", "Tracks open requests in the case log, not e-mail.",
    ),
    "legal-researcher": (
        "Works on consumer-credit disputes.", "Wants citations in OSCOLA style.",
        "Prefers summaries under 300 words.", "Follows the Consumer Duty outcome on price and value.",
        "Asks for the date a guidance note was last updated.", "Needs German and English sources side by side.",
        "Reviews complaints-handling rules each quarter.", "Wants dissenting opinions noted.",
        "Tracks the open consultation on overdraft pricing.", "Prefers statute text before commentary.",
        "Uses the internal precedent index first.", "Wants deadlines in a table.",
        "Asks for the jurisdiction at the top of each note.", "Keeps matter numbers out of summaries.",
    ),
}


@contextmanager
def demo_clock(moment: datetime) -> Iterator[datetime]:
    """`timezone.now()` answers `moment` (and moves on with the real clock)
    while inside; model defaults and simple-history call it too."""
    module: Any = django_timezone
    real = module.datetime
    offset = moment - real.now(tz=UTC)

    class Shifted(real):  # type: ignore[valid-type,misc]
        @classmethod
        def now(cls, tz: object = None) -> datetime:
            return real.now(tz) + offset  # type: ignore[no-any-return]

    module.datetime = Shifted
    try:
        yield moment
    finally:
        module.datetime = real


def _memory(facts: list[str]) -> str:
    return "# Memory\n" + "".join(f"- {fact}\n" for fact in facts)


class _History:
    def __init__(self, *, agents: dict[str, Agent], users: dict[str, Any], now: datetime, report: Any) -> None:
        self.agents, self.users, self.now, self.report = agents, users, now, report
        self.rng = random.Random(20261201)
        self.runs = apps.get_model("consolidation", "ConsolidationRun") if apps.is_installed("consolidation") else None
        self.facts: dict[tuple[str, str], list[str]] = {}
        self.open: list[Proposal] = []

    def at(self, day: datetime, hour: int, minute: int = 0) -> datetime | None:
        moment = day + timedelta(hours=hour, minutes=minute)
        # Nothing in the future, and nothing so recent that the guards' clock skew matters.
        return moment if moment < self.now - timedelta(minutes=15) else None

    def play(self) -> None:
        today = self.now.replace(hour=0, minute=0, second=0, microsecond=0)
        for days_ago in range(HISTORY_DAYS - 1, -1, -1):
            day = today - timedelta(days=days_ago)
            self.decide(day)
            for index, (slug, agent) in enumerate(sorted(self.agents.items())):
                for n, user_ref in enumerate(PAIRS.get(slug, ())):
                    self.session(day, index * 2 + n, agent, user_ref, days_ago)
                    self.run(day, index * 2 + n, agent, user_ref, days_ago)
        # The last runs' proposals are decided too, before now: the queue a
        # first visitor sees is the hand-written one, whatever the hour.
        self.decide(None)

    def fact(self, agent: Agent, user_ref: str, days_ago: int, slot: int) -> tuple[str, bool]:
        """The day's fact for the pair, and whether it repeats one already
        kept (a duplicate the run merges instead of adding)."""
        known = self.facts.get((agent.slug, user_ref), [])
        if known and (days_ago + slot) % 5 == 1:
            return known[(days_ago + slot) % len(known)], True
        facts = FACTS[agent.slug]
        return facts[(HISTORY_DAYS - 1 - days_ago + slot) % len(facts)], False

    def session(self, day: datetime, slot: int, agent: Agent, user_ref: str, days_ago: int) -> None:
        moment = self.at(day, 9 + slot, self.rng.randrange(0, 40))
        if moment is None:
            return
        fact, _ = self.fact(agent, user_ref, days_ago, slot)
        with demo_clock(moment):
            session = services.start_session(agent=agent, user_ref=user_ref, external_id=f"history-{days_ago}")
            services.append_log(session=session, entries=[
                {"role": "user", "content": f"Please remember this: {fact}"},
                {"role": "assistant", "content": "Noted; I will keep that in mind for next time."},
                {"role": "note", "content": fact},
            ])
        with demo_clock(moment + timedelta(minutes=12)):
            services.end_session(session=session)
        self.report.add("history sessions")

    def run(self, day: datetime, slot: int, agent: Agent, user_ref: str, days_ago: int) -> None:
        moment = self.at(day, 20, slot * 5)
        if moment is None or self.runs is None:
            return
        known = self.facts.setdefault((agent.slug, user_ref), [])
        fact, repeated = self.fact(agent, user_ref, days_ago, slot)
        if fact in known and not repeated:
            repeated = True
        outcome = "failed" if (days_ago + slot) % 6 == 3 else "no_change" if repeated else "succeeded"
        tokens_in = 900 + 140 * len(known) + self.rng.randrange(0, 300)
        tokens_out = 0 if outcome == "failed" else 180 + 20 * len(known) + self.rng.randrange(0, 80)
        cost = (Decimal(tokens_in) * Decimal(str(settings.OPENAI_PRICE_INPUT_PER_MTOK))
                + Decimal(tokens_out) * Decimal(str(settings.OPENAI_PRICE_OUTPUT_PER_MTOK))) / Decimal(1_000_000)
        by_kind = {} if outcome == "failed" else {"merge": 1} if repeated else {"add": 1}
        counts: dict[str, object] = {"gather": {"entries": 3},
                                  "consolidate": {"changes": sum(by_kind.values()), "by_kind": by_kind}}
        error = ("The model server answered HTTP 503 (service unavailable); the gate retries later."
                 if outcome == "failed" else "")
        with demo_clock(moment):
            proposal = None
            if outcome == "succeeded":
                evidence = list(services.get_session(agent=agent, session_id=self._last_session(agent, user_ref))
                                .entries.order_by("id").values_list("id", flat=True))[-1:]
                proposal = services.propose_change(
                    agent=agent, kind=FileKind.MEMORY, user_ref=user_ref, content=_memory([*known, fact]),
                    source=Source.CONSOLIDATION, reason="Consolidated the sessions ended since the last run.",
                    rationale=[{"kind": "add", "summary": f"Add: {fact}", "reason": "Stated by the user.",
                                "evidence": evidence}],
                )
                self.open.append(proposal)
            now = django_timezone.now()
            run = self.runs.objects.create(
                agent=agent, user_ref=user_ref, status=outcome, trigger="gate", backend="llm",
                model=settings.OPENAI_MODEL, tokens_in=tokens_in, tokens_out=tokens_out, cost_usd=cost,
                counts=counts, error=error, failure="transient" if outcome == "failed" else "", attempts=1,
                started_at=now, finished_at=now + timedelta(seconds=4 + self.rng.randrange(0, 40)),
            )
            if proposal is not None:
                run.proposals.add(proposal)
            services.record_event(
                action=f"consolidation.{outcome}", agent=agent, user_ref=user_ref, target=run,
                summary=f"Consolidation run #{run.pk} for {agent.slug}/{user_ref}: {outcome}"
                + (f" — {error}" if error else ""),
                details={"status": outcome, "error": error, "tokens_in": tokens_in, "tokens_out": tokens_out,
                         "cost_usd": str(cost), "demo": True},
            )
        self.report.add("history runs")

    def _last_session(self, agent: Agent, user_ref: str) -> int:
        return int(agent.sessions.filter(user_ref=user_ref).order_by("-started_at").values_list("pk", flat=True)[0])

    def decide(self, day: datetime | None) -> None:
        """Yesterday's proposals, decided in the morning (or, for the last
        ones, shortly after they were made): most approved, some rejected."""
        waiting, self.open = self.open, []
        reviewers = [self.users["reviewer"], self.users.get("reviewer2", self.users["reviewer"])]
        for n, proposal in enumerate(waiting):
            proposal.refresh_from_db(fields=["status"])
            if proposal.status != ProposalStatus.PENDING:
                continue
            moment = self.at(day, 10, 5 * n) if day is not None else None
            if moment is None:
                moment = min(proposal.created_at + timedelta(hours=2), self.now - timedelta(minutes=14))
            reviewer = reviewers[n % 2]
            with demo_clock(moment):
                if self.rng.random() < 0.25:
                    services.reject_proposal(proposal_id=proposal.pk, reviewer=reviewer,
                                             comment="Not needed in long-term memory.")
                    self.report.add("history rejections")
                else:
                    services.approve_proposal(proposal_id=proposal.pk, reviewer=reviewer,
                                              comment="Matches the session log.")
                    key = (proposal.agent.slug, proposal.user_ref)
                    self.facts[key] = [line[2:] for line in proposal.proposed_content.splitlines()
                                       if line.startswith("- ")]
                    self.report.add("history approvals")


def play(*, agents: dict[str, Agent], users: dict[str, object], now: datetime, report: object) -> None:
    _History(agents=agents, users=users, now=now, report=report).play()
