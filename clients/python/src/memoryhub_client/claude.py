"""Claude's memory tool (`memory_20250818`) backed by MemoryHub, for the
anthropic SDK's tool runner. Needs `anthropic` (the rest of the client
does not); import this module only where you use it.

    from anthropic import Anthropic
    from memoryhub_client import MemoryHub
    from memoryhub_client.claude import MemoryHubMemoryTool

    with MemoryHub(URL, api_key=KEY) as hub:
        memory = MemoryHubMemoryTool(hub, user="cust-1042")
        runner = Anthropic().beta.messages.tool_runner(
            model="claude-sonnet-4-5", max_tokens=1024, tools=[memory],
            messages=[{"role": "user", "content": "I prefer email."}])
        final = runner.until_done()

Every command goes to `POST /api/v1/memory/claude-memory`, where the
five memory files are `/memories/SOUL.md` … `/memories/MEMORY.md` under
MemoryHub's rules (scanner, limits, write policy, audit). A refusal is
raised as the SDK's `ToolError`, so the model reads it as an error result
(`is_error: true`) saying what exists. The version of each file the model
last viewed is sent as `If-Match` with an `insert`, whose line number is
only right for the text the model saw: a file changed in the meantime is
refused (412), and the model is told to view it again.
"""

from __future__ import annotations

from typing import Any

from anthropic.lib.tools import BetaAbstractMemoryTool, BetaAsyncAbstractMemoryTool, ToolError
from anthropic.types.beta import (
    BetaCacheControlEphemeralParam,
)
from pydantic import BaseModel

from memoryhub_client.client import AsyncMemoryHub, MemoryHub
from memoryhub_client.errors import MemoryHubError, VersionConflict
from memoryhub_client.models import ClaudeMemoryResult


class _Versions:
    """The version of each file as the model last saw it (a view or its own
    applied write), for the If-Match of a line-numbered insert."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}

    def if_match(self, command: BaseModel) -> int | None:
        if getattr(command, "command", None) != "insert":
            return None
        return self.seen.get(str(getattr(command, "path", "")).rsplit("/", 1)[-1])

    def answered(self, answer: ClaudeMemoryResult) -> str:
        """The text the model reads, noting the version its write left."""
        if answer.file is not None and answer.version is not None and not answer.pending:
            self.seen[answer.file] = answer.version
        return answer.result

    def refused(self, command: BaseModel, exc: MemoryHubError) -> ToolError:
        """The error the model reads; after a 412 it must view the file again."""
        if isinstance(exc, VersionConflict):
            self.seen.pop(str(getattr(command, "path", "")).rsplit("/", 1)[-1], None)
        return _tool_error(exc)


def _payload(command: BaseModel) -> dict[str, Any]:
    return command.model_dump(mode="json", exclude_none=True)


def _tool_error(exc: MemoryHubError) -> ToolError:
    if isinstance(exc, VersionConflict):
        return ToolError(f"{exc.detail} The file changed since you viewed it: view it again before inserting.")
    return ToolError(exc.detail or str(exc))


class MemoryHubMemoryTool(BetaAbstractMemoryTool):
    """The memory tool for `client.beta.messages.tool_runner(tools=[…])`,
    on one MemoryHub agent (its key) and one end user."""

    def __init__(self, hub: MemoryHub, *, user: str | None = None,
                 cache_control: BetaCacheControlEphemeralParam | None = None) -> None:
        super().__init__(cache_control=cache_control)
        self.hub = hub
        self.user = user
        self._versions = _Versions()

    def _send(self, command: BaseModel) -> str:
        try:
            answer = self.hub.claude_memory(_payload(command), user=self.user,
                                            if_match=self._versions.if_match(command))
        except MemoryHubError as exc:
            raise self._versions.refused(command, exc) from exc
        return self._versions.answered(answer)

    # Every command goes the same way: the server tells them apart.
    view = create = str_replace = insert = delete = rename = _send


class AsyncMemoryHubMemoryTool(BetaAsyncAbstractMemoryTool):
    """`MemoryHubMemoryTool` for `AsyncAnthropic`, over `AsyncMemoryHub`."""

    def __init__(self, hub: AsyncMemoryHub, *, user: str | None = None,
                 cache_control: BetaCacheControlEphemeralParam | None = None) -> None:
        super().__init__(cache_control=cache_control)
        self.hub = hub
        self.user = user
        self._versions = _Versions()

    async def _send(self, command: BaseModel) -> str:
        try:
            answer = await self.hub.claude_memory(_payload(command), user=self.user,
                                                  if_match=self._versions.if_match(command))
        except MemoryHubError as exc:
            raise self._versions.refused(command, exc) from exc
        return self._versions.answered(answer)

    view = create = str_replace = insert = delete = rename = _send


__all__ = ["AsyncMemoryHubMemoryTool", "MemoryHubMemoryTool"]
