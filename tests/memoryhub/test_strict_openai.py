"""The strict tool schemas with the openai SDK, against the scripted
OpenAI-protocol server (tests/openai_server.py): the SDK's own strict check
(`chat.completions.parse` refuses tools that are not strict) accepts them,
and what a strict model answers (every property, null for the unused ones)
runs through the real MCP server as if those arguments were left out."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest

from memoryhub import services, tool_schemas
from memoryhub.models import LogEntry, Proposal, WritePolicy
from tests.factories import AgentFactory
from tests.live import asgi_server
from tests.memoryhub.test_mcp import over_http, text_of
from tests.openai_server import OpenAIServer

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def model() -> Iterator[tuple[OpenAIServer, openai.OpenAI]]:
    with OpenAIServer() as server:
        yield server, openai.OpenAI(base_url=server.url, api_key="sk-test", timeout=10, max_retries=0)


def test_the_sdk_refuses_the_default_tools_for_parse_and_takes_the_strict_ones(model):
    server, client = model
    with pytest.raises(ValueError, match="strict"):
        client.chat.completions.parse(model="fake-model", messages=[{"role": "user", "content": "hi"}],
                                      tools=tool_schemas.render("openai"))
    server.reply_tool_calls(("memory_search", {"query": "contact channel", "user": "cust-7", "limit": None}))
    completion = client.chat.completions.parse(model="fake-model", messages=[{"role": "user", "content": "hi"}],
                                               tools=tool_schemas.render("openai", strict=True))
    (call,) = completion.choices[0].message.tool_calls
    assert call.function.parsed_arguments == {"query": "contact channel", "user": "cust-7", "limit": None}
    (sent,) = server.wait_for_requests(1)
    assert all(tool["function"]["strict"] is True for tool in sent["tools"])
    assert {tool["function"]["name"] for tool in sent["tools"]} == set(tool_schemas.BY_NAME)


def test_a_strict_models_calls_run_through_mcp_as_if_the_nulls_were_left_out(model):
    server, client = model
    agent = AgentFactory(write_policy=WritePolicy.REVIEW)
    key = services.issue_agent_key(agent=agent, actor=services.SYSTEM)[1]
    services.start_session(agent=agent, user_ref="cust-7")
    server.reply_tool_calls(
        ("memory_add", {"file": "SOUL.md", "text": "I answer in short sentences.", "user": None, "reason": None}),
        ("memory_note", {"text": "Customer asked for shorter answers.", "user": "cust-7", "session": None}),
    )
    completion = client.chat.completions.parse(model="fake-model", messages=[{"role": "user", "content": "hi"}],
                                               tools=tool_schemas.render("openai", strict=True))
    calls = [(c.function.name, c.function.parsed_arguments) for c in completion.choices[0].message.tool_calls]
    with asgi_server() as url:
        added, noted = over_http(url, key, *calls)
    assert not added.is_error and added.structured_content["status"] == "pending", text_of(added)
    assert not noted.is_error, text_of(noted)
    assert Proposal.objects.get().kind == "SOUL.md"
    assert LogEntry.objects.get().content == "Customer asked for shorter answers."
