"""The scenario suite: histories a person would recognise, built through the
real services (sessions, logs, approvals) and consolidated by the real
pipeline, each asserting the facts a reviewer would keep.

Histories live in the YAML files beside this module (see README there for
the format). Each runs with the heuristic backend; those with an `llm`
script also run against the scripted OpenAI-compatible server
(tests/openai_server.py), where a script answers each request with the
operations a model would send, flaws included.

Recall is the share of expected facts found in the files a reviewer would
approve (the newest pending consolidation proposal of each file, else the
approved file); precision is the share of those files' entries that are an
expected fact. `test_recall_and_precision_*` prints both (docs/consolidation.md
quotes them) and holds them to the targets.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.utils import timezone

from consolidation import entries as md
from consolidation import services
from consolidation.models import ConsolidationRun
from memoryhub import services as core
from memoryhub.models import Proposal, ProposalStatus, Role, Source
from tests.factories import AgentFactory, staff
from tests.openai_server import OpenAIServer

HERE = Path(__file__).resolve().parent
TARGET = 0.9


def load() -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for path in sorted(HERE.glob("*.yaml")):
        for item in yaml.safe_load(path.read_text(encoding="utf-8")):
            item["source"] = path.name
            found.append(item)
    return found


SCENARIOS = load()
LLM_SCENARIOS = [s for s in SCENARIOS if s.get("llm")]


# --- placeholders: dates relative to the day the test runs -----------------------------------

_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]


def _placeholder(token: str, today: date) -> str:
    kind, _, arg = token.partition(":")
    if kind == "next":
        target = _WEEKDAYS.index(arg)
        return (today + timedelta(days=(target - today.weekday()) % 7 or 7)).isoformat()
    if kind == "plus":
        return (today + timedelta(days=int(arg.rstrip("d")))).isoformat()
    if kind == "end" and arg == "quarter":
        month = ((today.month - 1) // 3) * 3 + 3
        first_next = date(today.year + (month == 12), month % 12 + 1, 1)
        return (first_next - timedelta(days=1)).isoformat()
    raise ValueError(f"unknown placeholder {{{token}}}")


def expand(text: str, today: date) -> str:
    return re.sub(r"\{([a-z]+:[a-z0-9]+)\}", lambda m: _placeholder(m.group(1), today), text)


# --- running a history -----------------------------------------------------------------------


@dataclass
class Outcome:
    files: dict[str, list[str]]
    runs: list[ConsolidationRun]
    expected: dict[str, list[str]]
    absent: list[str]
    matched: dict[str, list[str]] = field(default_factory=dict)

    def score(self) -> tuple[int, int, int, int]:
        """(facts found, facts expected, entries that are facts, entries)."""
        found = expected = good = total = 0
        for kind in ("USER.md", "MEMORY.md"):
            facts = self.expected.get(kind, [])
            entries = [e for e in self.files.get(kind, []) if not md.is_heading(e)]
            unused = list(entries)
            for fact in facts:
                hit = next((e for e in unused if matches(fact, e)), None)
                if hit is not None:
                    unused.remove(hit)
                    found += 1
            expected += len(facts)
            total += len(entries)
            good += len(entries) - len(unused)
        return found, expected, good, total


def matches(fact: str, entry: str) -> bool:
    """Every word of `fact` occurs in `entry` (case-insensitive); "a|b" is either."""
    lowered = entry.lower()
    return all(any(alt in lowered for alt in word.split("|")) for word in fact.lower().split())


def when(spec: Any, now: datetime) -> datetime:
    if spec is None:
        return now
    match = re.fullmatch(r"\+(\d+)d", str(spec))
    if match is None:
        raise ValueError(f"run time {spec!r} is not +Nd")
    return now + timedelta(days=int(match.group(1)))


def play(scenario: dict[str, Any], *, backend: str = "heuristic", server: OpenAIServer | None = None) -> Outcome:
    now = timezone.now()
    today = now.astimezone(UTC).date()
    agent = AgentFactory(consolidation_backend=backend, **scenario.get("agent", {}))
    reviewer = staff(agent.workspace, Role.REVIEWER)
    user_ref = "u-scenario"
    for kind, entries in (scenario.get("files") or {}).items():
        core.write_memory(agent=agent, kind=kind, user_ref=user_ref, content=md.render(entries))
    runs: list[ConsolidationRun] = []
    for index, step in enumerate(scenario["runs"]):
        for turns in step.get("sessions", []):
            session = core.start_session(agent=agent, user_ref=user_ref)
            core.append_log(session=session, entries=[{"role": role, "content": expand(text, today)}
                                                      for role, text in turns])
            core.end_session(session=session)
        if server is not None:
            server.respond_with(scripted_model(scenario["llm"][index] if index < len(scenario["llm"]) else []))
        run, _ = services.trigger_run(agent=agent, user_ref=user_ref)
        assert services.claim_run(run_id=run.pk)
        services.execute_run(run_id=run.pk, now=when(step.get("at"), now))
        run.refresh_from_db()
        runs.append(run)
        if step.get("approve"):
            for proposal in run.proposals.filter(status=ProposalStatus.PENDING):
                core.approve_proposal(proposal_id=proposal.pk, reviewer=reviewer)
    files: dict[str, list[str]] = {}
    for kind in ("USER.md", "MEMORY.md"):
        pending = (Proposal.objects.for_file(agent, kind, user_ref).filter(source=Source.CONSOLIDATION)
                   .pending().order_by("-id").first())
        content = pending.proposed_content if pending else core.read_memory(agent=agent, kind=kind,
                                                                            user_ref=user_ref).content
        files[kind] = list(md.parse(content))
    expect = scenario.get("expect", {})
    expected = {kind: [expand(f, today) for f in expect.get(kind, [])] for kind in ("USER.md", "MEMORY.md")}
    return Outcome(files=files, runs=runs, expected=expected, absent=list(expect.get("absent", [])))


def check(scenario: dict[str, Any], outcome: Outcome) -> None:
    everything = json.dumps(outcome.files)
    for kind, facts in outcome.expected.items():
        for fact in facts:
            assert any(matches(fact, entry) for entry in outcome.files[kind]), (
                f"{scenario['name']}: {kind} lacks {fact!r}; it holds {outcome.files[kind]}")
    for forbidden in outcome.absent:
        assert forbidden.lower() not in everything.lower(), f"{scenario['name']}: {forbidden!r} in {everything}"
    found, expected, good, total = outcome.score()
    assert good == total, f"{scenario['name']}: entries that are no expected fact in {outcome.files}"
    last = outcome.runs[-1]
    for key, value in (scenario.get("expect", {}).get("run") or {}).items():
        if key == "status":
            assert [r.status for r in outcome.runs][-1] == value, [r.error for r in outcome.runs]
        elif key == "not_understood":
            assert len(last.counts.get("not_understood", [])) == value, last.counts
        elif key == "contradictions":
            assert sum(r.counts.get("consolidate", {}).get("contradictions", 0) for r in outcome.runs) == value
        else:
            raise AssertionError(f"unknown run expectation {key}")


# --- the scripted model -------------------------------------------------------------------------


def scripted_model(script: list[dict[str, Any]]) -> Any:
    """A responder for OpenAIServer: `script` names log entries by a piece of
    their text and file entries by theirs; the request's ids and indexes are
    looked up, so the answer is what a model reading this prompt would send."""

    def respond(request: dict[str, Any]) -> str:
        data = json.loads(request["messages"][1]["content"])
        operations = []
        for step in script:
            evidence = [item["id"] for item in data["log"]
                        if any(piece.lower() in item["content"].lower() for piece in step.get("evidence", []))]
            if step.get("evidence") and not evidence:
                continue  # not in this batch
            operation = {k: v for k, v in step.items() if k not in ("evidence", "target")}
            operation["evidence"] = evidence
            operation.setdefault("reason", "Stated in the log.")
            if "target" in step:
                entries = data["files"][step["file"]]["entries"]
                wanted = step["target"] if isinstance(step["target"], list) else [step["target"]]
                indexes = [next(e["index"] for e in entries if piece.lower() in e["text"].lower())
                           for piece in wanted]
                operation["target"] = indexes if isinstance(step["target"], list) else indexes[0]
            operations.append(operation)
        return json.dumps({"operations": operations})

    return respond


@pytest.fixture
def llm_server(settings: Any, openai_server: OpenAIServer) -> OpenAIServer:
    settings.OPENAI_BASE_URL = openai_server.url
    settings.OPENAI_API_KEY = "sk-test"
    settings.OPENAI_MODEL = "scripted"
    settings.OPENAI_TIMEOUT = 5.0
    return openai_server


# --- the tests -------------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("scenario", [pytest.param(s, id=s["name"]) for s in SCENARIOS])
def test_heuristic_scenario(scenario: dict[str, Any]) -> None:
    check(scenario, play(scenario))


@pytest.mark.django_db
@pytest.mark.parametrize("scenario", [pytest.param(s, id=s["name"]) for s in LLM_SCENARIOS])
def test_scripted_llm_scenario(scenario: dict[str, Any], llm_server: OpenAIServer) -> None:
    check({**scenario, "expect": {**scenario.get("expect", {}), **scenario.get("llm_expect", {})}},
          play({**scenario, "expect": {**scenario.get("expect", {}), **scenario.get("llm_expect", {})}},
               backend="llm", server=llm_server))


def totals(outcomes: list[Outcome]) -> tuple[float, float, int, int, int, int]:
    found = expected = good = total = 0
    for outcome in outcomes:
        f, e, g, t = outcome.score()
        found, expected, good, total = found + f, expected + e, good + g, total + t
    return found / expected, good / total, found, expected, good, total


def report(label: str, outcomes: list[Outcome]) -> tuple[float, float]:
    recall, precision, found, expected, good, total = totals(outcomes)
    print(f"\n{label}: {len(outcomes)} histories, recall {recall:.1%} ({found}/{expected} expected facts), "
          f"precision {precision:.1%} ({good}/{total} entries)")
    return recall, precision


@pytest.mark.django_db
def test_recall_and_precision_heuristic() -> None:
    outcomes = [play(s) for s in SCENARIOS]
    recall, precision = report("heuristic", outcomes)
    assert recall >= TARGET and precision >= TARGET


@pytest.mark.django_db
def test_recall_and_precision_scripted_llm(llm_server: OpenAIServer) -> None:
    outcomes = []
    for scenario in LLM_SCENARIOS:
        merged = {**scenario, "expect": {**scenario.get("expect", {}), **scenario.get("llm_expect", {})}}
        outcomes.append(play(merged, backend="llm", server=llm_server))
    recall, precision = report("scripted llm", outcomes)
    assert recall >= TARGET and precision >= TARGET


def test_the_suite_has_at_least_twenty_histories_covering_every_topic() -> None:
    topics = {s.get("topic") for s in SCENARIOS}
    assert len(SCENARIOS) >= 20
    assert topics >= {"supersession", "slots", "duplicates", "relative dates", "multilingual", "contradictions",
                      "secrets", "agent-directed instructions", "pending overlap", "over-cap"}
