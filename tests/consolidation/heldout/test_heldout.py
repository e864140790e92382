"""The held-out histories, scored in aggregate only.

These 15 histories were written together with the dev half
(tests/consolidation/scenarios/dev/) before the rules of issue 20, and are
kept unseen while rules change: nothing here prints or asserts one
history's result, a history that crashes is counted, not shown, and the
assertion messages carry only the totals. docs/consolidation.md reports
their first run (on the code before issue 20) and the final figures.

    .venv/bin/python -m pytest tests/consolidation/heldout -q -s
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.consolidation.scenarios import harness
from tests.consolidation.scenarios.test_scenarios import backends, play
from tests.openai_server import OpenAIServer

TARGET = 0.9
HELD_OUT = harness.load(Path(__file__).resolve().parent)


@pytest.fixture
def llm_server(settings: Any, openai_server: OpenAIServer) -> OpenAIServer:
    harness.configure_llm(settings, openai_server)
    return openai_server


@pytest.mark.django_db
@pytest.mark.parametrize("backend", ["heuristic", "llm"])
def test_held_out_histories_meet_the_targets(backend: str, llm_server: OpenAIServer, settings: Any) -> None:
    outcomes = [play(s, backend, llm_server, settings) for s in HELD_OUT if backend in backends(s)]
    score = harness.total(outcomes)
    label = f"held out, {'heuristic' if backend == 'heuristic' else 'scripted llm'}"
    print("\n" + score.line(label))
    assert score.recall >= TARGET and score.precision >= TARGET, score.line(label)
    assert score.safety_failures == 0 and score.crashed == 0, score.line(label)
    assert score.bad_held == score.bad_answers, score.line(label)


def test_there_are_fifteen_held_out_histories() -> None:
    assert len(HELD_OUT) == 15
