"""examples/agent_loop.py runs a whole agent turn as a subprocess: against a
live MemoryHub server and the fake OpenAI-protocol server, with a scripted
tool call that writes memory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from memoryhub import context, services
from memoryhub.models import AgentSession, LogEntry, Proposal, ProposalStatus, WritePolicy
from tests.factories import AgentFactory
from tests.openai_server import OpenAIServer

pytestmark = pytest.mark.django_db(transaction=True)

EXAMPLE = Path(settings.BASE_DIR) / "examples" / "agent_loop.py"


def run_example(live_server: Any, key: str, openai_server: OpenAIServer,
                message: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MEMORYHUB_URL": live_server.url, "MEMORYHUB_API_KEY": key,
           "OPENAI_BASE_URL": openai_server.url, "OPENAI_API_KEY": "sk-test", "OPENAI_MODEL": "fake-model"}
    return subprocess.run([sys.executable, str(EXAMPLE), "--user", "cust-7", message], env=env,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


@pytest.fixture
def openai_server():
    with OpenAIServer() as server:
        yield server


def script_turn(server: OpenAIServer) -> None:
    server.reply_tool_calls(("memory_add", {"file": "MEMORY.md", "text": "Prefers email over phone calls.",
                                            "reason": "The user asked for email."}))
    server.reply("Noted: I will email you from now on.")


def test_the_example_runs_a_turn_and_its_memory_write_lands(live_server, openai_server):
    agent = AgentFactory()
    services.write_memory(agent=agent, kind="SOUL.md", content="I am Penny, a careful assistant.")
    key = services.issue_agent_key(agent=agent, actor=services.SYSTEM)[1]
    script_turn(openai_server)

    result = run_example(live_server, key, openai_server, "Please email me, no more calls.")

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Noted: I will email you from now on."
    memory = services.read_memory(agent=agent, kind="MEMORY.md", user_ref="cust-7")
    assert memory.content == "Prefers email over phone calls.\n" and memory.version == 1
    first, second = openai_server.requests
    assert "I am Penny" in first["messages"][0]["content"] and context.SEARCH_FIRST in first["messages"][0]["content"]
    assert [tool["function"]["name"] for tool in first["tools"]][2] == "memory_add"
    assert second["messages"][-1]["role"] == "tool" and "MEMORY.md is now v1" in second["messages"][-1]["content"]
    session = AgentSession.objects.get(agent=agent)
    assert session.ended_at is not None and session.user_ref == "cust-7"
    roles = list(LogEntry.objects.filter(session=session).order_by("pk").values_list("role", flat=True))
    assert roles == ["user", "tool", "assistant"]


def test_under_review_the_example_leaves_a_pending_proposal(live_server, openai_server):
    agent = AgentFactory(write_policy=WritePolicy.REVIEW)
    key = services.issue_agent_key(agent=agent, actor=services.SYSTEM)[1]
    script_turn(openai_server)

    result = run_example(live_server, key, openai_server, "Please email me, no more calls.")

    assert result.returncode == 0, result.stderr
    proposal = Proposal.objects.get(agent=agent)
    assert proposal.status == ProposalStatus.PENDING and proposal.user_ref == "cust-7"
    assert proposal.proposed_content == "Prefers email over phone calls.\n"
    assert f"proposal #{proposal.pk}" in openai_server.requests[1]["messages"][-1]["content"]
    assert not services.read_memory(agent=agent, kind="MEMORY.md", user_ref="cust-7").exists


def test_the_example_sends_strict_tools_and_runs_a_strict_models_note(live_server, openai_server):
    agent = AgentFactory()
    key = services.issue_agent_key(agent=agent, actor=services.SYSTEM)[1]
    openai_server.reply_tool_calls(("memory_note", {"text": "Customer wants email only.", "user": None,
                                                    "session": None}))
    openai_server.reply("Noted.")

    result = run_example(live_server, key, openai_server, "Email only, please.")

    assert result.returncode == 0, result.stderr
    first, second = openai_server.requests
    assert all(tool["function"]["strict"] is True for tool in first["tools"])
    assert context.NOTE_BEFORE_COMPACTION in first["messages"][0]["content"]
    assert "Noted in session" in second["messages"][-1]["content"]
    session = AgentSession.objects.get(agent=agent)
    notes = LogEntry.objects.filter(session=session, role="note")
    assert list(notes.values_list("content", flat=True)) == ["Customer wants email only."]
