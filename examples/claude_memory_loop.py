"""One agent turn with Claude's memory tool, backed by MemoryHub.

    MEMORYHUB_URL=http://127.0.0.1:8000 MEMORYHUB_API_KEY=mh_… \\
    ANTHROPIC_API_KEY=sk-ant-… ANTHROPIC_MODEL=claude-sonnet-4-5 \\
    python examples/claude_memory_loop.py --user cust-1042 "Please email me from now on, no more calls."

Claude's memory tool (`memory_20250818`) is client-side: the model asks for
`view`, `create`, `str_replace`, `insert`… on `/memories/…`, and the
application runs them. `memoryhub_client.claude.MemoryHubMemoryTool` runs
them against MemoryHub, where the directory holds the agent's five files
(`/memories/SOUL.md` … `/memories/MEMORY.md`) under MemoryHub's rules: a
write under the `review` policy becomes a proposal, an unsafe one is
refused, and the model reads each answer as its tool result.

The turn: start a session (its context is frozen) → the assembled context
as the system prompt → the anthropic SDK's tool runner with the memory tool
until the model answers → the turn into the session log → end the session.
It prints the answer on stdout and one line per memory command on stderr.
ANTHROPIC_BASE_URL points the SDK elsewhere (the tests use a scripted
server on 127.0.0.1).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import anthropic
from anthropic.lib.tools import BetaFunctionToolResultType, ToolError
from anthropic.types import AnthropicBetaParam
from anthropic.types.beta import BetaMemoryTool20250818Command
from memoryhub_client import LogEntry, MemoryHub
from memoryhub_client.claude import MemoryHubMemoryTool

MAX_STEPS = 8
# The memory tool's beta (Anthropic's memory tool page).
BETAS: list[AnthropicBetaParam] = ["context-management-2025-06-27"]


class LoggedMemoryTool(MemoryHubMemoryTool):
    """The MemoryHub memory tool, noting each command and its answer for
    the session log (and on stderr)."""

    def __init__(self, hub: MemoryHub, *, user: str, log: list[LogEntry]) -> None:
        super().__init__(hub, user=user)
        self.log = log

    def execute(self, command: BetaMemoryTool20250818Command) -> BetaFunctionToolResultType:
        call = json.dumps(command.model_dump(exclude_none=True))
        try:
            result = super().execute(command)
        except ToolError as exc:
            self._note(f"memory {call} -> error: {exc}")
            raise
        self._note(f"memory {call} -> ok: {result}")
        return result

    def _note(self, line: str) -> None:
        print(line, file=sys.stderr)
        self.log.append(LogEntry("tool", line))


def agent_turn(hub: MemoryHub, claude: anthropic.Anthropic, model: str, user: str, message: str) -> str:
    session = hub.start_session(user)
    context = hub.context(user, session=session.id)
    log = [LogEntry("user", message)]
    runner = claude.beta.messages.tool_runner(
        model=model, max_tokens=1024, system=context.system_prompt, betas=BETAS,
        tools=[LoggedMemoryTool(hub, user=user, log=log)], max_iterations=MAX_STEPS,
        messages=[{"role": "user", "content": message}],
    )
    final = runner.until_done()
    answer = "".join(block.text for block in final.content if block.type == "text")
    log.append(LogEntry("assistant", answer or "(empty answer)"))
    hub.log(session.id, log)
    hub.end_session(session.id)
    return answer


def main() -> int:
    parser = argparse.ArgumentParser(description="Run one agent turn with Claude's memory tool on MemoryHub.")
    parser.add_argument("--user", required=True, help="The end user's reference.")
    parser.add_argument("message", help="What the user says.")
    options = parser.parse_args()
    claude = anthropic.Anthropic(base_url=os.environ.get("ANTHROPIC_BASE_URL"),
                                 api_key=os.environ["ANTHROPIC_API_KEY"], timeout=60, max_retries=2)
    with MemoryHub(os.environ.get("MEMORYHUB_URL", "http://127.0.0.1:8000"),
                   os.environ["MEMORYHUB_API_KEY"]) as hub:
        print(agent_turn(hub, claude, os.environ.get("ANTHROPIC_MODEL", "claude-sonnet-4-5"), options.user,
                         options.message))
    return 0


if __name__ == "__main__":
    sys.exit(main())
