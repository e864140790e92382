"""Bounded cost (prompt cap and batching, the budget checked before every
call, a per-run ceiling) and provenance (no fact lost while proposals wait,
each line's own evidence)."""

from __future__ import annotations

import json
import re
from collections import Counter
from decimal import Decimal
from typing import Any

import pytest
from django.utils import timezone

from consolidation import provenance, services
from consolidation.models import ConsolidationPair, ConsolidationRun, RunStatus
from memoryhub import services as core
from memoryhub.models import AgentSession, LogEntry, Proposal, ProposalStatus, Role
from memoryhub.tokens import counter_for
from tests.factories import AgentFactory, staff
from tests.openai_server import OpenAIServer

pytestmark = pytest.mark.django_db


def log(agent: Any, user_ref: str, *entries: tuple[str, str]) -> list[LogEntry]:
    session = AgentSession.objects.create(agent=agent, user_ref=user_ref, ended_at=timezone.now())
    return LogEntry.objects.bulk_create(
        LogEntry(session=session, agent=agent, user_ref=user_ref, role=role, content=content)
        for role, content in entries
    )


def run_now(agent: Any, user_ref: str = "u1") -> ConsolidationRun:
    run, _ = services.trigger_run(agent=agent, user_ref=user_ref)
    assert services.claim_run(run_id=run.pk)
    services.execute_run(run_id=run.pk)
    run.refresh_from_db()
    return run


_LOG_LINE = re.compile(r"^(?P<id>\d+) (?P<role>[unat]) (?P<content>.*)$")


def log_lines(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The log entries a request carries, read from its compact format."""
    return [{"id": int(m.group("id")), "role": m.group("role"), "content": m.group("content")}
            for line in request["messages"][1]["content"].splitlines() if (m := _LOG_LINE.match(line))]


def notes_answer(request: dict[str, Any]) -> str:
    """A scripted model: adds every agent note of the request to MEMORY.md."""
    return json.dumps({"operations": [
        {"op": "add", "file": "MEMORY.md", "text": item["content"], "reason": "The agent noted it.",
         "evidence": [item["id"]]}
        for item in log_lines(request) if item["role"] == "n"
    ]})


@pytest.fixture
def llm(settings: Any, openai_server: OpenAIServer) -> OpenAIServer:
    settings.OPENAI_BASE_URL = openai_server.url
    settings.OPENAI_API_KEY = "sk-test"
    settings.OPENAI_MODEL = "gpt-test"
    settings.OPENAI_TIMEOUT = 5.0
    settings.OPENAI_PRICE_INPUT_PER_MTOK = 1.0
    settings.OPENAI_PRICE_OUTPUT_PER_MTOK = 2.0
    settings.OPENAI_MAX_TOKENS = 1000
    return openai_server


# --- cost ------------------------------------------------------------------------------------------


def test_a_long_backlog_is_sent_in_batches_under_the_prompt_cap(llm: OpenAIServer, settings: Any) -> None:
    # Today's hole: one prompt of whatever size (808 KB was measured).
    settings.OPENAI_MAX_PROMPT_CHARS = 6_000
    agent = AgentFactory(consolidation_backend="llm", limit_memory=20_000)
    notes = log(agent, "u1", *[("note", f"Service {i:02d} listens on port {5000 + i}.") for i in range(40)],
                *[("tool", "x" * 400) for _ in range(20)])
    llm.respond_with(notes_answer)

    run = run_now(agent)

    assert run.status == RunStatus.SUCCEEDED, run.error
    assert len(llm.requests) >= 2 and run.counts["consolidate"]["calls"] == len(llm.requests)
    assert all(sum(len(m["content"]) for m in request["messages"]) <= 6_000 for request in llm.requests)
    assert all(request["max_tokens"] == 1000 for request in llm.requests)
    [proposal] = run.proposals.all()
    assert proposal.proposed_content.count("\n") == 40
    by_entry = provenance.evidence_by_entry(proposal.rationale)
    assert by_entry["Service 07 listens on port 5007."] == [notes[7].pk]
    assert run.high_water_mark == notes[-1].pk


def test_no_call_is_made_that_could_overshoot_the_daily_budget(llm: OpenAIServer) -> None:
    # Today's hole: the budget was checked before the run only, and one call
    # spent 171% of it. Here $0.0005 is left, less than the prompt alone
    # (~1k tokens × $1/M) and a minimal answer would cost.
    agent = AgentFactory(consolidation_backend="llm", daily_budget_usd=Decimal("0.0015"))
    ConsolidationRun.objects.create(agent=agent, user_ref="u0", backend="llm", status=RunStatus.SUCCEEDED,
                                    cost_usd=Decimal("0.0010"))
    log(agent, "u1", ("note", "CI runs on GitHub Actions"))

    run = run_now(agent)

    assert run.status == RunStatus.SKIPPED and llm.requests == []
    assert "could cost $0.00" in run.error and "daily consolidation budget is left" in run.error
    assert not ConsolidationPair.objects.filter(needs_attention=True).exists()


def test_a_run_stops_between_batches_at_its_budget_and_the_next_run_reads_the_rest(
    llm: OpenAIServer, settings: Any
) -> None:
    # Only the answer is priced here: every call is estimated at exactly
    # 1000 tokens × $2/M = $0.002 and, answering in full, costs that much.
    # After two calls $0.0005 is left: room for 250 answer tokens, too few
    # for a useful answer, so no third call is made.
    settings.OPENAI_PRICE_INPUT_PER_MTOK = 0.0
    settings.OPENAI_MAX_PROMPT_CHARS = 4_000
    settings.CONSOLIDATION_MAX_RUN_COST_USD = 0.0045
    agent = AgentFactory(consolidation_backend="llm", limit_memory=20_000)
    notes = log(agent, "u1", *[(("note", f"Service {i:02d} listens on port {5000 + i}.")) for i in range(60)],
                *[("tool", "y" * 300) for _ in range(15)])
    llm.respond_with(notes_answer, completion_tokens=1000)

    first = run_now(agent)

    assert first.status == RunStatus.SUCCEEDED and len(llm.requests) == 2, first.error
    assert first.cost_usd == Decimal("0.004")
    assert "ceiling" in first.counts["consolidate"]["stopped"]
    read = first.counts["consolidate"]["read_through"]
    assert first.high_water_mark == read < notes[-1].pk
    [proposal] = first.proposals.all()
    core.approve_proposal(proposal_id=proposal.pk, reviewer=staff(agent.workspace, Role.REVIEWER))
    second = run_now(agent)
    assert second.counts["gather"]["entries"] == sum(1 for n in notes if n.pk > read)


def test_a_batch_that_alone_exceeds_the_run_ceiling_needs_attention(llm: OpenAIServer, settings: Any) -> None:
    settings.CONSOLIDATION_MAX_RUN_COST_USD = 0.0001
    agent = AgentFactory(consolidation_backend="llm")
    log(agent, "u1", ("note", "CI runs on GitHub Actions"))

    run = run_now(agent)

    assert run.status == RunStatus.FAILED and llm.requests == []
    assert "CONSOLIDATION_MAX_RUN_COST_USD" in run.error
    assert ConsolidationPair.objects.get(agent=agent).needs_attention


def test_the_last_call_asks_for_no_more_answer_than_the_ceiling_leaves(llm: OpenAIServer, settings: Any) -> None:
    # Each answer costs 700 tokens × $2/M = $0.0014; after two calls $0.0007
    # is left: 350 answer tokens fit, so the third call asks for 350, not
    # 1000, and the run stays under its ceiling.
    settings.OPENAI_PRICE_INPUT_PER_MTOK = 0.0
    settings.OPENAI_MAX_PROMPT_CHARS = 4_000
    settings.CONSOLIDATION_MAX_RUN_COST_USD = 0.0035
    agent = AgentFactory(consolidation_backend="llm", limit_memory=20_000)
    log(agent, "u1", *[("note", f"Service {i:02d} listens on port {5000 + i}.") for i in range(60)])
    calls: list[int] = []

    def answer_within(request: dict[str, Any]) -> str:
        calls.append(request["max_tokens"])
        return notes_answer(request)

    llm.respond_with(answer_within, completion_tokens=700, honour_max_tokens=True)

    run = run_now(agent)

    assert calls[:3] == [1000, 1000, 350], run.error
    assert run.cost_usd <= Decimal("0.0035") and run.status == RunStatus.SUCCEEDED


def test_a_server_that_answers_past_the_ceiling_fails_the_run_flagged_and_proposes_nothing(
    llm: OpenAIServer, settings: Any
) -> None:
    # Today's hole: a run recorded $0.54 against a $0.50 ceiling and
    # succeeded unflagged. Here the server reports 5,000 answer tokens for a
    # call that asked for at most 1,000.
    settings.CONSOLIDATION_MAX_RUN_COST_USD = 0.005
    agent = AgentFactory(consolidation_backend="llm")
    log(agent, "u1", ("note", "CI runs on GitHub Actions"))
    llm.respond_with(notes_answer, completion_tokens=5_000)

    run = run_now(agent)

    assert run.status == RunStatus.FAILED and not run.proposals.exists()
    assert run.cost_usd > Decimal("0.005") and "over the $0.0050 run's ceiling" in run.error
    assert ConsolidationPair.objects.get(agent=agent).needs_attention


def test_a_server_that_reports_no_usage_is_charged_its_estimate(llm: OpenAIServer) -> None:
    agent = AgentFactory(consolidation_backend="llm")
    log(agent, "u1", ("note", "CI runs on GitHub Actions"))
    llm.reply_json({"id": "x", "object": "chat.completion", "created": 0, "choices": [
        {"index": 0, "message": {"role": "assistant", "content": notes_answer({"messages": [
            {}, {"content": f"{LogEntry.objects.get().pk} n CI runs on GitHub Actions"}]})},
         "finish_reason": "stop"}]})

    run = run_now(agent)

    assert run.status == RunStatus.SUCCEEDED
    assert run.tokens_in > 100 and run.tokens_out > 10 and run.cost_usd > 0
    assert run.counts["consolidate"]["usage_estimated"] is True


# --- never lose a fact silently ---------------------------------------------------------------------


def test_three_runs_without_approval_propose_every_fact_of_all_three() -> None:
    # Today's hole: run 2 superseded run 1's proposal without its evidence.
    agent = AgentFactory()
    first = log(agent, "u1", ("user", "Remember that I live in Lisbon."), ("note", "CI runs on GitHub Actions"))
    [p1, m1] = sorted(run_now(agent).proposals.all(), key=lambda p: p.kind, reverse=True)
    second = log(agent, "u1", ("user", "I prefer email for routine updates."), ("note", "Deploys happen on Fridays"))
    run_now(agent)
    third = log(agent, "u1", ("user", "Call me Dana."), ("note", "Staging listens on port 5433"))

    run = run_now(agent)

    user, memory = sorted(run.proposals.all(), key=lambda p: p.kind, reverse=True)
    assert user.proposed_content == ("- Lives in Lisbon.\n- Prefers email for routine updates.\n"
                                     "- Wants to be called Dana.\n")
    assert memory.proposed_content == ("- CI runs on GitHub Actions.\n- Deploys happen on Fridays.\n"
                                       "- Staging listens on port 5433.\n")
    assert user.base_version == 0 and memory.base_version == 0
    assert provenance.evidence_for_lines(user.rationale, user.proposed_content) == [
        [first[0].pk], [second[0].pk], [third[0].pk]]
    assert provenance.evidence_for_lines(memory.rationale, memory.proposed_content) == [
        [first[1].pk], [second[1].pk], [third[1].pk]]
    carry = [item for item in user.rationale if item["kind"] == "carry"]
    assert len(carry) == 1 and "which this one supersedes" in carry[0]["summary"]
    assert "Builds on proposal #" in user.reason
    assert Proposal.objects.filter(status=ProposalStatus.PENDING).count() == 2
    p1.refresh_from_db(), m1.refresh_from_db()
    assert p1.status == m1.status == ProposalStatus.SUPERSEDED


def test_a_stale_proposal_is_replayed_onto_the_new_version_and_superseded() -> None:
    agent = AgentFactory()
    [said] = log(agent, "u1", ("user", "Remember that I live in Lisbon."))
    [stale] = run_now(agent).proposals.all()
    core.write_memory(agent=agent, kind="USER.md", user_ref="u1", content="- Uses vim\n")  # the agent writes
    stale.refresh_from_db()
    assert stale.status == ProposalStatus.STALE
    [later] = log(agent, "u1", ("note", "Deploys happen on Fridays"))

    run = run_now(agent)

    user = run.proposals.get(kind="USER.md")
    assert user.base_version == 1 and user.proposed_content == "- Uses vim\n- Lives in Lisbon.\n"
    assert provenance.evidence_for_lines(user.rationale, user.proposed_content) == [[], [said.pk]]
    stale.refresh_from_db()
    assert (stale.status, stale.superseded_by_id) == (ProposalStatus.SUPERSEDED, user.pk)
    assert run.proposals.get(kind="MEMORY.md").rationale[0]["evidence"] == [later.pk]


def test_a_pending_proposal_that_nothing_new_changes_is_left_as_it_is() -> None:
    agent = AgentFactory()
    log(agent, "u1", ("user", "Remember that I live in Lisbon."))
    [pending] = run_now(agent).proposals.all()
    log(agent, "u1", ("assistant", "Anything else?"))

    again = run_now(agent)

    assert again.status == RunStatus.NO_CHANGE
    pending.refresh_from_db()
    assert pending.status == ProposalStatus.PENDING


# --- provenance per line ---------------------------------------------------------------------------


def test_each_line_carries_only_its_own_evidence() -> None:
    # Today's hole: blame gave every line of a consolidated version all of
    # the run's evidence ids.
    agent = AgentFactory()
    core.write_memory(agent=agent, kind="USER.md", user_ref="u1", content="- Use npm\n")
    entries = log(agent, "u1", ("user", "From now on, use pnpm, not npm."), ("user", "Remember that I live in Lisbon."),
                  ("note", "User lives in Lisbon"), ("user", "I prefer concise answers."))

    [proposal] = run_now(agent).proposals.all()

    assert proposal.proposed_content == "- Use pnpm, not npm.\n- Lives in Lisbon.\n- Prefers concise answers.\n"
    assert provenance.evidence_for_lines(proposal.rationale, proposal.proposed_content) == [
        [entries[0].pk], [entries[1].pk, entries[2].pk], [entries[3].pk]]
    for change in proposal.rationale:
        if change["after"]:
            assert change["after"] in proposal.proposed_content or change["kind"] in ("merge",)


def test_evidence_for_lines_reads_headings_blank_lines_and_unknown_lines() -> None:
    rationale = [
        {"kind": "add", "file": "MEMORY.md", "after": "Deploys happen on Fridays.", "evidence": [4, 2]},
        {"kind": "merge", "file": "MEMORY.md", "after": "Deploys happen on Fridays.", "evidence": ["9"]},
        {"kind": "expire", "file": "MEMORY.md", "before": "On call", "after": None, "evidence": [3]},
        "not a change",
    ]
    content = "# Work\n\n- Deploys happen on Fridays.\n- Written by hand\n"

    assert provenance.evidence_for_lines(rationale, content) == [[], [], [2, 4, 9], []]


def test_the_scanner_reads_each_log_entry_once_and_each_proposal_once(monkeypatch: Any) -> None:
    from consolidation import classify
    from memoryhub import scanner

    classify.cache_clear()  # earlier tests classified the same entries

    real_scan = scanner.scan
    scanned: list[str] = []

    def counting_scan(text: str) -> Any:
        scanned.append(text)
        return real_scan(text)

    agent = AgentFactory()
    entries = log(agent, "u1", ("user", "Remember that I live in Lisbon."), ("note", "CI runs on GitHub Actions"),
                  ("assistant", "Done."), ("tool", "exit 0"))
    monkeypatch.setattr(scanner, "scan", counting_scan)

    run = run_now(agent)

    proposals = list(run.proposals.all())
    assert len(proposals) == 2
    # Each log entry at gather, each candidate entry in the classifier (its
    # own wording), each proposal once: nothing twice.
    assert Counter(scanned).most_common(1)[0][1] == 1, Counter(scanned).most_common(3)
    assert set(scanned) == {e.content for e in entries} | {"Lives in Lisbon.", "CI runs on GitHub Actions."} | {
        p.proposed_content for p in proposals}
    assert sorted(scanned[-2:]) == sorted(p.proposed_content for p in proposals)


def test_other_languages_go_to_the_llm_backend_when_configured(llm: OpenAIServer, settings: Any) -> None:
    settings.CONSOLIDATION_OTHER_LANGUAGES_TO_LLM = True
    agent = AgentFactory()  # heuristic
    english, italian = log(agent, "u1", ("user", "Remember that I live in Turin."),
                           ("user", "Preferisco le risposte brevi, ricordalo per favore."))
    llm.reply(json.dumps({"operations": [{"op": "add", "file": "USER.md", "text": "Prefers short answers.",
                                          "reason": "Said in Italian.", "evidence": [italian.pk]}]}))

    run = run_now(agent)

    [proposal] = run.proposals.all()
    assert proposal.proposed_content == "- Lives in Turin.\n- Prefers short answers.\n"
    assert "not_understood" not in run.counts and run.model == "heuristic+fake-model"
    [request] = llm.requests
    assert [item["id"] for item in log_lines(request)] == [italian.pk]
    assert provenance.evidence_for_lines(proposal.rationale, proposal.proposed_content) == [[english.pk],
                                                                                          [italian.pk]]


# --- a seed-sized run -------------------------------------------------------------------------------

# Five sessions like the seed's estimate assumes (20 entries each: chat, tool
# output, directives, notes, some German), and a 1,000-character MEMORY.md.
SEED_SESSION = [
    ("user", "Morning! Can you look at the failing build for {project}?"),
    ("assistant", "Sure, checking the CI logs for {project} now."),
    ("tool", "ci.log: 312 tests, 2 failed (test_{n}_sync, test_{n}_retry) in 41.2s"),
    ("assistant", "Two tests fail; both touch the retry logic."),
    ("user", "From now on, run the linter before you push anything."),
    ("assistant", "Will do."),
    ("note", "The {project} repo uses pytest {n} and ruff"),
    ("tool", "ruff check: 3 files changed, 0 errors"),
    ("user", "I prefer email for routine updates."),
    ("assistant", "Noted: email for routine updates."),
    ("user", "For urgent things I prefer a phone call."),
    ("note", "Staging for {project} listens on port {port}"),
    ("user", "Remember that I'm on vacation until Friday."),
    ("assistant", "Enjoy the break!"),
    ("tool", "deploy.sh: staging deploy finished in 93s"),
    ("user", "Ich bevorzuge kurze Antworten."),
    ("assistant", "Alles klar, kurze Antworten."),
    ("note", "Deploys of {project} happen on Fridays"),
    ("user", "Thanks, that fixed it!"),
    ("assistant", "Great. Anything else?"),
]
SEED_MEMORY = "".join(f"- {line}\n" for line in [
    "The atlas service is written in Go 1.22 and deployed with Helm from the deploy/ folder.",
    "Integration tests need Docker running and take about 11 minutes on the CI runners.",
    "Feature flags live in Unleash; the project key is atlas-core and flags are kebab-case.",
    "Logs go to Loki with a 14-day retention; older logs are in the atlas-logs-archive bucket.",
    "Code owners for services/atlas are @lena-k and @omar-t; both approve schema changes.",
    "Database migrations use goose and every migration needs a down step, which CI checks.",
    "Currency amounts are stored as integer cents in int64 columns, never as floats.",
    "The on-call handbook is in Confluence under ATL/Runbooks; page the secondary after 15 min.",
    "Kafka topic atlas.events.v2 carries invoice events; v1 was retired in March.",
    "Error budget: 99.9% monthly SLO on the public API, p99 latency under 300 ms.",
    "Renovate opens dependency PRs on Mondays; merge them before Wednesday's release cut.",
])


def test_a_seed_sized_run_stays_within_the_seeds_token_budget(llm: OpenAIServer) -> None:
    # Today's hole: 9,181 prompt tokens for this run, mostly JSON around each
    # entry. The seed budgets ~5,500 per run, in and out together.
    assert 950 <= len(SEED_MEMORY) <= 1050
    agent = AgentFactory(consolidation_backend="llm")
    core.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content=SEED_MEMORY)
    for s in range(5):
        log(agent, "u1", *[(role, text.format(project=["atlas", "borealis", "cobalt", "dynamo", "ember"][s], n=s + 7,
                                              port=5400 + s)) for role, text in SEED_SESSION])
    answers: list[str] = []

    def model(request: dict[str, Any]) -> str:
        entries = log_lines(request)
        first = {text: item["id"] for item in reversed(entries) for text in [item["content"]]}
        ops = [
            {"op": "add", "file": "USER.md", "text": "Run the linter before pushing anything.",
             "reason": "A standing directive from the user.",
             "evidence": [i for t, i in first.items() if "run the linter" in t][:1]},
            {"op": "add", "file": "USER.md", "text": "Prefers email for routine updates.",
             "reason": "Stated preference.", "evidence": [i for t, i in first.items() if "email for routine" in t][:1]},
            {"op": "add", "file": "USER.md", "text": "Prefers a phone call for urgent things.",
             "reason": "Stated preference.", "evidence": [i for t, i in first.items() if "phone call" in t][:1]},
            {"op": "add", "file": "USER.md", "text": "Prefers short answers.", "reason": "Said in German.",
             "evidence": [i for t, i in first.items() if "kurze Antworten" in t][:1]},
        ] + [
            {"op": "add", "file": "MEMORY.md", "text": item["content"] + ".", "reason": "The agent noted it.",
             "evidence": [item["id"]]}
            for item in entries if item["role"] == "n" and "port" in item["content"]
        ]
        answers.append(json.dumps({"operations": ops}))
        return answers[-1]

    llm.respond_with(model)

    run = run_now(agent)

    assert run.status == RunStatus.SUCCEEDED, run.error
    [request] = llm.requests
    counter = counter_for(agent.token_encoding)
    tokens_in = sum(counter.count(m["content"]) for m in request["messages"])
    tokens_out = counter.count(answers[0])
    assert tokens_in + tokens_out <= 5_500, (tokens_in, tokens_out)
    assert "Prefers email for routine updates." in Proposal.objects.get(kind="USER.md").proposed_content
