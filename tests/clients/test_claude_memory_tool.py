"""memoryhub_client.claude against a live server: the anthropic SDK's
memory tool interface (BetaAbstractMemoryTool) backed by MemoryHub,
called as the SDK's tool runner calls it (`tool.call(tool_use.input)`)."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.lib.tools import BetaAbstractMemoryTool, BetaAsyncAbstractMemoryTool, ToolError
from memoryhub_client import AsyncMemoryHub, MemoryHub
from memoryhub_client.claude import AsyncMemoryHubMemoryTool, MemoryHubMemoryTool

from memoryhub import services
from tests.live import run_async

pytestmark = pytest.mark.django_db(transaction=True)


def memory(agent) -> str:
    return services.read_memory(agent=agent, kind="MEMORY.md", user_ref="u1").content


def test_it_is_the_sdks_memory_tool_and_writes_through_memoryhub(live_server: Any, agent, key):
    with MemoryHub(live_server.url, key) as hub:
        tool = MemoryHubMemoryTool(hub, user="u1")
        assert isinstance(tool, BetaAbstractMemoryTool)
        assert tool.to_dict() == {"type": "memory_20250818", "name": "memory"}
        created = tool.call({"command": "create", "path": "/memories/MEMORY.md", "file_text": "- likes tea\n"})
        assert str(created).startswith("File created successfully at: /memories/MEMORY.md")
        tool.call({"command": "insert", "path": "/memories/MEMORY.md", "insert_line": 1,
                   "insert_text": "- lives in Oslo"})
        assert memory(agent) == "- likes tea\n- lives in Oslo\n"
        with pytest.raises(ToolError, match="Cannot rename /memories/MEMORY.md") as refused:
            tool.call({"command": "rename", "old_path": "/memories/MEMORY.md", "new_path": "/memories/x.md"})
        assert "/memories/SOUL.md, /memories/ABOUT.md" in str(refused.value)


def test_an_insert_after_someone_else_changed_the_file_is_refused_until_viewed_again(live_server, agent, key):
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content="- likes tea\n")
    with MemoryHub(live_server.url, key) as hub:
        tool = MemoryHubMemoryTool(hub, user="u1")
        tool.call({"command": "view", "path": "/memories/MEMORY.md"})
        services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content="- likes coffee\n- in Oslo\n")
        insert = {"command": "insert", "path": "/memories/MEMORY.md", "insert_line": 1, "insert_text": "- cycles"}
        with pytest.raises(ToolError, match="view it again"):
            tool.call(insert)
        assert memory(agent) == "- likes coffee\n- in Oslo\n"
        tool.call({"command": "view", "path": "/memories/MEMORY.md"})
        tool.call(insert)
        assert memory(agent) == "- likes coffee\n- cycles\n- in Oslo\n"


def test_the_async_tool_does_the_same(live_server, agent, key):
    async def scenario() -> tuple[Any, str]:
        async with AsyncMemoryHub(live_server.url, key) as hub:
            tool = AsyncMemoryHubMemoryTool(hub, user="u1")
            assert isinstance(tool, BetaAsyncAbstractMemoryTool)
            await tool.call({"command": "create", "path": "/memories/USER.md", "file_text": "- Name: Ada\n"})
            listed = await tool.call({"command": "view", "path": "/memories"})
            try:
                await tool.call({"command": "delete", "path": "/memories/USER.md"})
            except ToolError as exc:
                return listed, str(exc)
            return listed, ""

    listed, refused = run_async(scenario)
    assert "12B\t/memories/USER.md" in str(listed)
    assert refused.startswith("Cannot delete /memories/USER.md")
    assert services.read_memory(agent=agent, kind="USER.md", user_ref="u1").content == "- Name: Ada\n"
