"""examples/claude_memory_loop.py runs a whole turn as a subprocess: the
real anthropic SDK's tool runner against a scripted Messages server on
127.0.0.1, its memory tool (memoryhub_client.claude) against a live
MemoryHub server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from memoryhub import services
from memoryhub.models import AgentSession, LogEntry, Proposal, ProposalStatus, WritePolicy
from tests.anthropic_server import AnthropicServer
from tests.factories import AgentFactory

pytestmark = pytest.mark.django_db(transaction=True)

EXAMPLE = Path(settings.BASE_DIR) / "examples" / "claude_memory_loop.py"
LISTING = "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:"


@pytest.fixture
def claude():
    with AnthropicServer() as server:
        yield server


def run_example(live_server: Any, key: str, server: AnthropicServer, message: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MEMORYHUB_URL": live_server.url, "MEMORYHUB_API_KEY": key,
           "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_MODEL": "fake-claude"}
    return subprocess.run([sys.executable, str(EXAMPLE), "--user", "cust-7", message], env=env,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def script_turn(server: AnthropicServer) -> None:
    server.reply_tool_use("memory", {"command": "view", "path": "/memories"},
                          text="Let me check my memory first.")
    server.reply_tool_use("memory", {"command": "rename", "old_path": "/memories/MEMORY.md",
                                     "new_path": "/memories/contact.md"})
    server.reply_tool_use("memory", {"command": "create", "path": "/memories/MEMORY.md",
                                     "file_text": "- Prefers email over phone calls.\n"})
    server.reply_text("Noted: I will email you from now on.")


def tool_results(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [block for block in request["messages"][-1]["content"] if block["type"] == "tool_result"]


def test_the_example_runs_claude_memory_commands_against_memoryhub(live_server, claude):
    agent = AgentFactory(write_policy=WritePolicy.DIRECT)
    services.write_memory(agent=agent, kind="SOUL.md", content="I am Penny, a careful assistant.")
    key = services.issue_agent_key(agent=agent, actor=services.SYSTEM)[1]
    script_turn(claude)

    result = run_example(live_server, key, claude, "Please email me, no more calls.")

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Noted: I will email you from now on."
    assert claude.pending == 0 and len(claude.requests) == 4
    first = claude.requests[0]
    assert first["tools"] == [{"type": "memory_20250818", "name": "memory"}]
    assert "I am Penny" in first["system"]
    assert "context-management-2025-06-27" in claude.request_headers[0]["anthropic-beta"]
    [listed] = tool_results(claude.requests[1])
    assert listed["content"].startswith(LISTING) and "32B\t/memories/SOUL.md" in listed["content"]
    assert "is_error" not in listed or listed["is_error"] is False
    [renamed] = tool_results(claude.requests[2])
    assert renamed["is_error"] is True
    assert "Cannot rename /memories/MEMORY.md" in str(renamed["content"])
    assert "/memories/USER.md, /memories/MEMORY.md" in str(renamed["content"])
    [created] = tool_results(claude.requests[3])
    assert str(created["content"]).startswith("File created successfully at: /memories/MEMORY.md")
    memory = services.read_memory(agent=agent, kind="MEMORY.md", user_ref="cust-7")
    assert memory.content == "- Prefers email over phone calls.\n" and memory.version == 1
    session = AgentSession.objects.get(agent=agent)
    assert session.ended_at is not None
    roles = list(LogEntry.objects.filter(session=session).order_by("pk").values_list("role", flat=True))
    assert roles == ["user", "tool", "tool", "tool", "assistant"]


def test_under_review_the_model_is_told_its_write_waits_for_a_person(live_server, claude):
    agent = AgentFactory(write_policy=WritePolicy.REVIEW)
    key = services.issue_agent_key(agent=agent, actor=services.SYSTEM)[1]
    script_turn(claude)

    result = run_example(live_server, key, claude, "Please email me, no more calls.")

    assert result.returncode == 0, result.stderr
    proposal = Proposal.objects.get(agent=agent)
    assert proposal.status == ProposalStatus.PENDING and proposal.user_ref == "cust-7"
    assert proposal.proposed_content == "- Prefers email over phone calls.\n"
    [created] = tool_results(claude.requests[3])
    assert f"proposal #{proposal.pk} (pending)" in str(created["content"])
    assert not services.read_memory(agent=agent, kind="MEMORY.md", user_ref="cust-7").exists
