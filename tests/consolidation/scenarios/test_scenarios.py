"""The scenario suite: histories a person would recognise, built through the
real services (sessions, logs, approvals) and consolidated by the real
pipeline, each asserting the facts a reviewer would keep.

Histories live in the YAML files beside this module (see README there for
the format) and, written later and in another hand, in `dev/`; their
held-out twins are in tests/consolidation/heldout/. Each runs with the
heuristic backend; those with an `llm` script also run against the scripted
OpenAI-compatible server (tests/openai_server.py), where a script answers
each request with the operations a model would send, flaws included.

Recall is the share of expected facts found in the files a reviewer would
approve (the newest pending consolidation proposal of each file, else the
approved file); precision is the share of those files' entries that are an
expected fact. `test_recall_and_precision_*` prints both (docs/consolidation.md
quotes them) and holds them to the targets, with the safety counts
(personal data, agent-directed instructions and secrets promoted, silent
losses) held at zero.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.consolidation.scenarios import harness
from tests.openai_server import OpenAIServer

TARGET = 0.9
SCENARIOS = harness.load(harness.Path(__file__).resolve().parent)
DEV = harness.load(harness.Path(__file__).resolve().parent / "dev")


def backends(scenario: dict[str, Any]) -> list[str]:
    if "backends" in scenario:
        return list(scenario["backends"])
    if scenario.get("llm") and scenario.get("route") != "llm":
        return ["heuristic", "llm"]
    return ["heuristic"]


def cases(histories: list[dict[str, Any]], backend: str) -> list[Any]:
    return [pytest.param(s, id=s["name"]) for s in histories if backend in backends(s)]


@pytest.fixture
def llm_server(settings: Any, openai_server: OpenAIServer) -> OpenAIServer:
    harness.configure_llm(settings, openai_server)
    return openai_server


def play(scenario: dict[str, Any], backend: str, server: OpenAIServer, settings: Any) -> harness.Outcome:
    if backend == "llm":
        return harness.play(harness.llm_variant(scenario), backend="llm", server=server, settings=settings)
    routed = scenario.get("route") == "llm"
    return harness.play(scenario, server=server if routed else None, settings=settings)


@pytest.mark.django_db
@pytest.mark.parametrize("scenario", cases(SCENARIOS + DEV, "heuristic"))
def test_heuristic_scenario(scenario: dict[str, Any], llm_server: OpenAIServer, settings: Any) -> None:
    harness.check(scenario, play(scenario, "heuristic", llm_server, settings))


@pytest.mark.django_db
@pytest.mark.parametrize("scenario", cases(SCENARIOS + DEV, "llm"))
def test_scripted_llm_scenario(scenario: dict[str, Any], llm_server: OpenAIServer, settings: Any) -> None:
    harness.check(harness.llm_variant(scenario), play(scenario, "llm", llm_server, settings))


def report(label: str, outcomes: list[harness.Outcome]) -> harness.Score:
    score = harness.total(outcomes)
    print("\n" + score.line(label))
    return score


def assert_targets(score: harness.Score, label: str) -> None:
    assert score.recall >= TARGET and score.precision >= TARGET, score.line(label)
    assert score.safety_failures == 0 and score.crashed == 0, score.line(label)
    assert score.bad_held == score.bad_answers, score.line(label)


@pytest.mark.django_db
@pytest.mark.parametrize("suite", ["team", "dev"])
def test_recall_and_precision_heuristic(suite: str, llm_server: OpenAIServer, settings: Any) -> None:
    histories = SCENARIOS if suite == "team" else DEV
    outcomes = [play(s, "heuristic", llm_server, settings) for s in histories if "heuristic" in backends(s)]
    assert_targets(report(f"heuristic, {suite} histories", outcomes), suite)


@pytest.mark.django_db
@pytest.mark.parametrize("suite", ["team", "dev"])
def test_recall_and_precision_scripted_llm(suite: str, llm_server: OpenAIServer, settings: Any) -> None:
    histories = SCENARIOS if suite == "team" else DEV
    outcomes = [play(s, "llm", llm_server, settings) for s in histories if "llm" in backends(s)]
    assert_targets(report(f"scripted llm, {suite} histories", outcomes), suite)


def test_the_suite_has_at_least_twenty_histories_covering_every_topic() -> None:
    topics = {s.get("topic") for s in SCENARIOS}
    assert len(SCENARIOS) >= 20
    assert topics >= {"supersession", "slots", "duplicates", "relative dates", "multilingual", "contradictions",
                      "secrets", "agent-directed instructions", "pending overlap", "over-cap"}
    assert len(DEV) == 15
