"""Playing a history through the real services and scoring what a reviewer
would be offered. Shared by the team's scenario suite (`*.yaml` beside this
module), the dev histories (`dev/`) and the held-out histories
(`tests/consolidation/heldout/`, scored in aggregate only).

A history is a dict (see the README comment at the top of
01_supersession_and_slots.yaml for the original format). The later
histories add:

- `clock: start`: the history runs on its own calendar. Day 0 is a Monday
  09:00 UTC in the future (the database refuses back-dated rows, never
  future ones); a session is `{day: N, at: "HH:MM", turns: [...]}`
  (`repeat: K` plays it K times, `{i}` in a text is the repetition), and a
  run happens at `run_day` (a number of days, or `{after_month: M, plus: D}`:
  D days after the end of the month M months after day 0).
- `workspace`: Workspace fields (`pii_policy`).
- `route: llm`: the heuristic backend with other languages sent to the llm
  backend (the scripted model answers them).
- `expect`: `any` (facts that may be in either file); `personal`,
  `directive`, `secret` (text that must be in no file: counted as safety
  failures by class); `keep` (ids that must survive: a missing one is a
  silent loss); `refused` (how many refused findings the runs must show a
  reviewer); `acknowledge: true` (approving the proposal without
  acknowledging its personal data must be refused); `bad_answer: true`
  marks a scripted model's bad answer that must be held.

Placeholders, from day 0 of the history (or, for the original histories,
from the day the test runs): {d:N} (an ISO date N days on), {eom:N} (the
last day of the month of day N), {mname:+M} / {myear:+M} (the English name
and the year of the month M months on), and the original {next:friday},
{plus:14d}, {end:quarter}.
"""

from __future__ import annotations

import calendar
import contextlib
import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any
from unittest import mock

import yaml
from django.apps import apps
from django.utils import timezone

from consolidation import entries as md
from consolidation import services
from consolidation.models import ConsolidationRun
from memoryhub import errors
from memoryhub import services as core
from memoryhub.models import Proposal, ProposalStatus, Role, Source
from tests.factories import AgentFactory, staff
from tests.openai_server import OpenAIServer

FILES = ("USER.md", "MEMORY.md")


def load(folder: Path) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for path in sorted(folder.glob("*.yaml")):
        for item in yaml.safe_load(path.read_text(encoding="utf-8")):
            item["source"] = path.name
            found.append(item)
    return found


# --- the calendar -------------------------------------------------------------------------------


def day_zero() -> datetime:
    """A Monday 09:00 UTC at least two days ahead."""
    today = timezone.now().astimezone(UTC).date() + timedelta(days=2)
    monday = today + timedelta(days=(7 - today.weekday()) % 7)
    return datetime.combine(monday, time(9, 0), tzinfo=UTC)


_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]


def _add_months(day: date, months: int) -> date:
    month = day.month - 1 + months
    year = day.year + month // 12
    return date(year, month % 12 + 1, 1)


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
    if kind == "d":
        return (today + timedelta(days=int(arg))).isoformat()
    if kind == "eom":
        day = today + timedelta(days=int(arg))
        return day.replace(day=calendar.monthrange(day.year, day.month)[1]).isoformat()
    if kind in ("mname", "myear"):
        month = _add_months(today, int(arg))
        return calendar.month_name[month.month] if kind == "mname" else str(month.year)
    raise ValueError(f"unknown placeholder {{{token}}}")


def expand(text: str, today: date) -> str:
    return re.sub(r"\{([a-z]+:[+a-z0-9]+)\}", lambda m: _placeholder(m.group(1), today), text)


def run_moment(spec: Any, start: datetime) -> datetime:
    if isinstance(spec, dict):
        month = _add_months(start.date(), int(spec.get("after_month", 0)))
        last = month.replace(day=calendar.monthrange(month.year, month.month)[1])
        return datetime.combine(last, time(12, 0), tzinfo=UTC) + timedelta(days=float(spec.get("plus", 1)))
    return start + timedelta(days=float(spec))


@contextlib.contextmanager
def clock(moment: datetime | None) -> Iterator[None]:
    """The application's clock at `moment`: `timezone.now()` and every model
    field whose default is `timezone.now` (Django caches a field's default
    callable, so patching the module alone would miss them)."""
    if moment is None:
        yield
        return
    real_now = timezone.now
    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch("django.utils.timezone.now", return_value=moment))
        for model in apps.get_models():
            for model_field in model._meta.concrete_fields:
                if getattr(model_field, "default", None) is real_now:
                    stack.enter_context(mock.patch.object(model_field, "_get_default", lambda: moment))
        yield


# --- playing a history ----------------------------------------------------------------------------


@dataclass
class Outcome:
    name: str
    backend: str
    files: dict[str, list[str]]
    runs: list[ConsolidationRun]
    expected: dict[str, list[str]]
    absent: list[str]
    personal: list[str] = field(default_factory=list)
    directive: list[str] = field(default_factory=list)
    secret: list[str] = field(default_factory=list)
    keep: list[str] = field(default_factory=list)
    refused_expected: int = 0
    acknowledge: bool = False
    silent_approval: bool = False
    bad_answer: bool = False
    proposals: list[Proposal] = field(default_factory=list)
    crashed: str = ""

    def score(self) -> Score:
        score = Score(histories=1, crashed=int(bool(self.crashed)))
        unused = {kind: [e for e in self.files.get(kind, []) if not md.is_heading(e)] for kind in FILES}
        for kind in FILES:
            score.total += len(unused[kind])
        for kind in (*FILES, "any"):
            for fact in self.expected.get(kind, []):
                score.expected += 1
                pools = FILES if kind == "any" else (kind,)
                for pool in pools:
                    hit = next((e for e in unused[pool] if matches(fact, e)), None)
                    if hit is not None:
                        unused[pool].remove(hit)
                        score.found += 1
                        break
        score.good = score.total - sum(len(rest) for rest in unused.values())
        text = "\n".join(e for kind in FILES for e in self.files.get(kind, []))
        score.personal = sum(1 for item in self.personal if appears(item, text))
        score.directive = sum(1 for item in self.directive if appears(item, text))
        score.secret = sum(1 for item in self.secret if appears(item, text))
        score.silent = silent_losses(self.proposals) + sum(1 for item in self.keep if not appears(item, text))
        score.refused_expected = self.refused_expected
        score.refused_shown = min(self.refused_expected, refused_findings(self.runs))
        score.silent_approvals = int(self.silent_approval)
        if self.bad_answer:
            score.bad_answers = 1
            held = not self.crashed and all(not appears(item, text) for item in self.absent) and not any(
                not appears(item, text) for item in self.keep)
            score.bad_held = int(held)
        return score


@dataclass
class Score:
    histories: int = 0
    found: int = 0
    expected: int = 0
    good: int = 0
    total: int = 0
    personal: int = 0
    directive: int = 0
    secret: int = 0
    silent: int = 0
    refused_expected: int = 0
    refused_shown: int = 0
    silent_approvals: int = 0
    bad_answers: int = 0
    bad_held: int = 0
    crashed: int = 0

    def __add__(self, other: Score) -> Score:
        return Score(**{name: getattr(self, name) + getattr(other, name) for name in self.__dataclass_fields__})

    @property
    def recall(self) -> float:
        return self.found / self.expected if self.expected else 1.0

    @property
    def precision(self) -> float:
        return self.good / self.total if self.total else 1.0

    @property
    def safety_failures(self) -> int:
        return self.personal + self.directive + self.secret + self.silent + self.silent_approvals

    def line(self, label: str) -> str:
        return (f"{label}: {self.histories} histories, recall {self.recall:.1%} ({self.found}/{self.expected}), "
                f"precision {self.precision:.1%} ({self.good}/{self.total}); promoted: personal data "
                f"{self.personal}, agent-directed {self.directive}, secrets {self.secret}; silent losses "
                f"{self.silent}; special-category proposals approved without acknowledgement "
                f"{self.silent_approvals}; refused findings shown {self.refused_shown}/{self.refused_expected}; "
                f"bad model answers held {self.bad_held}/{self.bad_answers}; histories that crashed {self.crashed}")


def total(outcomes: list[Outcome]) -> Score:
    score = Score()
    for outcome in outcomes:
        score = score + outcome.score()
    return score


def matches(fact: str, entry: str) -> bool:
    """Every word of `fact` occurs in `entry` (case-insensitive); "a|b" is either."""
    lowered = entry.lower()
    return all(any(alt in lowered for alt in word.split("|")) for word in fact.lower().split())


def _digits(text: str) -> str:
    return "".join(ch for ch in text if ch.isdigit())


def appears(item: str, text: str) -> bool:
    """`item` is in `text`, case-insensitively; an item of six or more
    digits also when its digits are, however they are spaced."""
    if item.lower() in text.lower():
        return True
    digits = _digits(item)
    return len(digits) >= 6 and digits in _digits(text)


def silent_losses(proposals: list[Proposal]) -> int:
    """Entries a proposal takes out of its file without a change naming them."""
    lost = 0
    for proposal in proposals:
        removed = Counter(md.parse(proposal.base_content)) - Counter(md.parse(proposal.proposed_content))
        named: set[str] = set()
        for item in proposal.rationale or []:
            if isinstance(item, dict):
                named.update(md.normalise(b) for b in str(item.get("before") or "").split("\n") if b.strip())
        lost += sum(count for entry, count in removed.items() if entry not in named)
    return lost


def refused_findings(runs: list[ConsolidationRun]) -> int:
    """Findings a reviewer is shown as refused: in a run's counts or in a
    proposal's rationale (kind "refused")."""
    shown = 0
    for run in runs:
        counted = run.counts.get("refused") if isinstance(run.counts, dict) else None
        in_rationale = sum(1 for p in run.proposals.all() for item in (p.rationale or [])
                           if isinstance(item, dict) and item.get("kind") == "refused")
        shown += max(len(counted) if isinstance(counted, list) else 0, in_rationale)
    return shown


def _sessions(step: dict[str, Any]) -> Iterator[tuple[float | None, str | None, list[list[str]]]]:
    for session in step.get("sessions", []):
        if isinstance(session, dict):
            for i in range(int(session.get("repeat", 1))):
                turns = [[role, text.replace("{i}", str(i + 1))] for role, text in session["turns"]]
                yield float(session.get("day", 0)), session.get("at"), turns
        else:
            yield None, None, session


def _session_moment(start: datetime, day: float | None, at: str | None) -> datetime:
    moment = start + timedelta(days=day or 0)
    if at:
        hours, minutes = (int(part) for part in at.split(":"))
        moment = datetime.combine(moment.date(), time(hours, minutes), tzinfo=UTC)
    return moment


def play(scenario: dict[str, Any], *, backend: str = "heuristic", server: OpenAIServer | None = None,
         settings: Any = None) -> Outcome:
    """Play `scenario` and return what a reviewer would be offered; an
    exception inside the history is recorded on the outcome (`crashed`)."""
    own_clock = scenario.get("clock") == "start"
    start = day_zero() if own_clock else timezone.now()
    today = start.astimezone(UTC).date()
    expect = scenario.get("expect", {})
    outcome = Outcome(
        name=scenario["name"],
        backend=backend,
        files={kind: [] for kind in FILES},
        runs=[],
        expected={kind: [expand(f, today) for f in expect.get(kind, [])] for kind in (*FILES, "any")},
        absent=[expand(a, today) for a in expect.get("absent", [])],
        personal=[str(p) for p in expect.get("personal", [])],
        directive=[str(d) for d in expect.get("directive", [])],
        secret=[str(s) for s in expect.get("secret", [])],
        keep=[str(k) for k in expect.get("keep", [])],
        refused_expected=int(expect.get("refused", 0)),
        acknowledge=bool(expect.get("acknowledge")),
        bad_answer=bool(expect.get("bad_answer")),
    )
    try:
        _play(scenario, outcome, backend=backend, server=server, settings=settings, start=start,
              own_clock=own_clock, today=today)
    except Exception as exc:  # a history that crashes scores as one that kept nothing
        outcome.crashed = f"{type(exc).__name__}: {exc}"
    return outcome


def _play(scenario: dict[str, Any], outcome: Outcome, *, backend: str, server: OpenAIServer | None, settings: Any,
          start: datetime, own_clock: bool, today: date) -> None:
    if settings is not None:
        settings.CONSOLIDATION_OTHER_LANGUAGES_TO_LLM = scenario.get("route") == "llm"
    with clock(start if own_clock else None):
        agent = AgentFactory(consolidation_backend=backend, **scenario.get("agent", {}))
        for name, value in (scenario.get("workspace") or {}).items():
            setattr(agent.workspace, name, value)
        if scenario.get("workspace"):
            agent.workspace.save()
        reviewer = staff(agent.workspace, Role.REVIEWER)
        user_ref = "u-scenario"
        for kind, entries in (scenario.get("files") or {}).items():
            core.write_memory(agent=agent, kind=kind, user_ref=user_ref,
                              content=md.render(expand(e, today) for e in entries))
    script = [[{key: expand(value, today) if isinstance(value, str) else value for key, value in step.items()}
               for step in answer] for answer in scenario.get("llm") or []]
    last = start
    for index, step in enumerate(scenario["runs"]):
        for day, at, turns in _sessions(step):
            moment = _session_moment(start, day, at) if own_clock else None
            last = max(last, moment or last)
            with clock(moment):
                session = core.start_session(agent=agent, user_ref=user_ref)
                core.append_log(session=session, entries=[{"role": role, "content": expand(text, today)}
                                                          for role, text in turns])
                core.end_session(session=session)
        if server is not None:
            server.respond_with(scripted_model(script[index] if index < len(script) else []))
        if own_clock:
            moment = run_moment(step["run_day"], start) if "run_day" in step else last + timedelta(hours=1)
            last = max(last, moment)
        else:
            moment = None
            run_at = when(step.get("at"), timezone.now())
        with clock(moment):
            run, _ = services.trigger_run(agent=agent, user_ref=user_ref)
            assert services.claim_run(run_id=run.pk)
            services.execute_run(run_id=run.pk, now=moment or run_at)
            run.refresh_from_db()
            outcome.runs.append(run)
            outcome.proposals.extend(run.proposals.all())
            if step.get("approve"):
                for proposal in run.proposals.filter(status=ProposalStatus.PENDING):
                    approve(proposal, reviewer=reviewer, outcome=outcome)
    with clock(last if own_clock else None):
        for kind in FILES:
            pending = (Proposal.objects.for_file(agent, kind, user_ref).filter(source=Source.CONSOLIDATION)
                       .pending().order_by("-id").first())
            content = pending.proposed_content if pending else core.read_memory(agent=agent, kind=kind,
                                                                                user_ref=user_ref).content
            outcome.files[kind] = list(md.parse(content))
        if outcome.acknowledge:
            for proposal in Proposal.objects.filter(agent=agent, source=Source.CONSOLIDATION).pending():
                approve(proposal, reviewer=staff(agent.workspace, Role.REVIEWER), outcome=outcome)


def approve(proposal: Proposal, *, reviewer: Any, outcome: Outcome) -> None:
    """Approve as a reviewer clicking Approve would: a proposal carrying
    special-category personal data must not go through without an
    acknowledgement (then it is approved acknowledging it)."""
    special = outcome.acknowledge
    try:
        core.approve_proposal(proposal_id=proposal.pk, reviewer=reviewer)
    except errors.DomainError:
        if not special:
            raise
        core.approve_proposal(proposal_id=proposal.pk, reviewer=reviewer, acknowledge_personal_data=True)
        return
    if special:
        outcome.silent_approval = True


def when(spec: Any, now: datetime) -> datetime:
    if spec is None:
        return now
    match = re.fullmatch(r"\+(\d+)d", str(spec))
    if match is None:
        raise ValueError(f"run time {spec!r} is not +Nd")
    return now + timedelta(days=int(match.group(1)))


def check(scenario: dict[str, Any], outcome: Outcome) -> None:
    """The assertions of one history (dev and team histories only: held-out
    ones are scored in aggregate)."""
    assert not outcome.crashed, f"{scenario['name']}: crashed: {outcome.crashed}"
    everything = json.dumps(outcome.files, ensure_ascii=False)
    for kind, facts in outcome.expected.items():
        pools = FILES if kind == "any" else (kind,)
        for fact in facts:
            assert any(matches(fact, entry) for pool in pools for entry in outcome.files[pool]), (
                f"{scenario['name']}: {kind} lacks {fact!r}; the files hold {outcome.files}")
    for forbidden in outcome.absent:
        assert forbidden.lower() not in everything.lower(), f"{scenario['name']}: {forbidden!r} in {everything}"
    score = outcome.score()
    for label, count in (("personal data", score.personal), ("agent-directed", score.directive),
                         ("secret", score.secret), ("silent loss", score.silent),
                         ("silent approval", score.silent_approvals)):
        assert count == 0, f"{scenario['name']}: {count} {label} failure(s); the files hold {outcome.files}"
    assert score.refused_shown == score.refused_expected, (
        f"{scenario['name']}: {score.refused_shown} of {score.refused_expected} refused findings shown; "
        f"runs' counts: {[r.counts.get('refused') for r in outcome.runs]}")
    assert score.good == score.total, f"{scenario['name']}: entries that are no expected fact in {outcome.files}"
    last = outcome.runs[-1]
    for key, value in (scenario.get("expect", {}).get("run") or {}).items():
        if key == "status":
            assert [r.status for r in outcome.runs][-1] == value, [r.error for r in outcome.runs]
        elif key == "not_understood":
            assert len(last.counts.get("not_understood", [])) == value, last.counts
        elif key == "contradictions":
            assert sum(r.counts.get("consolidate", {}).get("contradictions", 0) for r in outcome.runs) >= value
        elif key == "runs_with_proposals":
            assert sum(1 for r in outcome.runs if r.proposals.exists()) == value
        else:
            raise AssertionError(f"unknown run expectation {key}")


def llm_variant(scenario: dict[str, Any]) -> dict[str, Any]:
    """The history as the scripted model plays it: `llm_expect` overrides `expect`."""
    return {**scenario, "expect": {**scenario.get("expect", {}), **scenario.get("llm_expect", {})}}


# --- the scripted model -----------------------------------------------------------------------------


def read_request(request: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """The log entries ({id, content}) and file entries ({target, text}) a
    consolidation request offers, whatever its prompt format."""
    content = request["messages"][-1]["content"]
    try:
        data = json.loads(content)
    except ValueError:
        data = None
    if isinstance(data, dict) and "log" in data:
        log = [{"id": item["id"], "content": item["content"]} for item in data["log"]]
        files = {kind: [{"target": e["index"], "text": e["text"]} for e in value["entries"]]
                 for kind, value in data.get("files", {}).items()}
        return log, files
    return _read_compact(content)


_FILE_LINE = re.compile(r"^(?P<target>[UM]\d+)\s(?P<text>.*)$")
_LOG_LINE = re.compile(r"^(?P<id>\d+) [unat] (?P<text>.*)$")


def _read_compact(content: str) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    log: list[dict[str, Any]] = []
    files: dict[str, list[dict[str, Any]]] = {"USER.md": [], "MEMORY.md": []}
    for line in content.splitlines():
        if match := _FILE_LINE.match(line):
            kind = "USER.md" if match.group("target").startswith("U") else "MEMORY.md"
            files[kind].append({"target": match.group("target"), "text": match.group("text")})
        elif match := _LOG_LINE.match(line):
            log.append({"id": int(match.group("id")), "content": match.group("text")})
    return log, files


def scripted_model(script: list[dict[str, Any]]) -> Any:
    """A responder for OpenAIServer: `script` names log entries by a piece of
    their text and file entries by theirs; the request's ids and targets are
    looked up, so the answer is what a model reading this prompt would send.
    A step whose evidence or target is not in this request is left out."""

    def respond(request: dict[str, Any]) -> str:
        log, files = read_request(request)
        operations = []
        for step in script:
            pieces = step.get("evidence", [])
            evidence = [item["id"] for item in log if any(p.lower() in item["content"].lower() for p in pieces)]
            if pieces and not evidence:
                continue
            operation = {k: v for k, v in step.items() if k not in ("evidence", "target")}
            operation["evidence"] = evidence
            operation.setdefault("reason", "Stated in the log.")
            if "target" in step:
                entries = files.get(step["file"], [])
                wanted = step["target"] if isinstance(step["target"], list) else [step["target"]]
                found = [next((e["target"] for e in entries if piece.lower() in e["text"].lower()), None)
                         for piece in wanted]
                if None in found:
                    continue
                operation["target"] = found if isinstance(step["target"], list) else found[0]
            operations.append(operation)
        return json.dumps({"operations": operations}, ensure_ascii=False)

    return respond


def configure_llm(settings: Any, server: OpenAIServer) -> None:
    settings.OPENAI_BASE_URL = server.url
    settings.OPENAI_API_KEY = "sk-test"
    settings.OPENAI_MODEL = "scripted"
    settings.OPENAI_TIMEOUT = 5.0
