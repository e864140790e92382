"""One complete agent turn against MemoryHub, with the openai SDK.

    MEMORYHUB_URL=http://127.0.0.1:8000 MEMORYHUB_API_KEY=mh_… \\
    OPENAI_BASE_URL=https://api.openai.com/v1 OPENAI_API_KEY=sk-… OPENAI_MODEL=gpt-4o-mini \\
    python examples/agent_loop.py --user cust-1042 "Please email me from now on, no more calls."

The turn: start a session (its context is frozen) → read the assembled
context → call the model with the memory tools in strict mode (GET /api/v1/
memory/tool-schemas?format=openai&strict=true) → run each tool call through memoryhub-client (entry
writes answer at once, or go to review) → feed the results back until the
model answers → append the turn to the session log → end the session. It
prints the model's answer on stdout and one line per tool call on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import openai
from memoryhub_client import LogEntry, MemoryHub, MemoryHubError

MAX_STEPS = 6
USER_FILES = ("USER.md", "MEMORY.md")


def run_tool(hub: MemoryHub, name: str, args: dict[str, Any], user: str) -> str:
    """One memory tool call, answered as text for the model. A refused call
    (bad arguments, unsafe content, ambiguous text…) is an answer too: the
    model reads the reason and can try again."""
    # A strict-mode model sends every argument, null for those it does not use.
    args = {key: value for key, value in args.items() if value is not None}
    if args.get("file") in (*USER_FILES, "notes") or name in ("memory_search", "memory_note"):
        args.setdefault("user", user)  # this turn's user, unless the model named one
    try:
        if name == "memory_note":
            saved = hub.note(args["text"], user=args["user"], session=args.get("session"))
            return f"Noted in session {saved.session}'s log."
        if name == "memory_view" and args["file"] == "notes":
            notes = hub.notes(user=args["user"])
            return "\n".join(f"{note.created_at:%Y-%m-%d %H:%M} {note.text}" for note in notes) or "No notes."
        if name == "memory_view":
            file = hub.read(args["file"], user=args.get("user"))
            return f"{file.file} v{file.version} ({file.chars}/{file.limit} chars):\n{file.content or '(empty)'}"
        if name == "memory_search":
            hits = hub.search(args["query"], user=args.get("user"), limit=int(args.get("limit", 10)))
            return "\n".join(f"[{hit.file or f'session {hit.session}'}] {hit.snippet}" for hit in hits) or "No match."
        if name == "memory_add":
            outcome = hub.add_entry(args["file"], args["text"], user=args.get("user"), reason=args.get("reason", ""))
        elif name == "memory_replace":
            outcome = hub.replace_entry(args["file"], args["old_text"], args["new_text"], user=args.get("user"),
                                        reason=args.get("reason", ""))
        elif name == "memory_remove":
            outcome = hub.remove_entry(args["file"], args["old_text"], user=args.get("user"),
                                       reason=args.get("reason", ""))
        else:
            return f"not_found: there is no tool {name!r}."
    except MemoryHubError as exc:
        return f"{exc.code}: {exc.detail}"
    except (KeyError, TypeError, ValueError) as exc:
        return f"invalid: bad arguments for {name}: {exc}"
    if outcome.pending:
        return f"Sent for review as proposal #{outcome.proposal}: nothing is served until a person approves it."
    return f"Done: {outcome.file} is now v{outcome.version}." + (f" {outcome.warning}" if outcome.warning else "")


def agent_turn(hub: MemoryHub, model: openai.OpenAI, model_name: str, user: str, message: str) -> str:
    session = hub.start_session(user)
    context = hub.context(user, session=session.id)
    tools = hub.tool_schemas("openai", strict=True)  # for structured outputs; the server reads null as absent
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": context.system_prompt},
        {"role": "user", "content": message},
    ]
    log = [LogEntry("user", message)]
    answer = ""
    for _ in range(MAX_STEPS):
        completion = model.chat.completions.create(model=model_name, messages=messages,  # type: ignore[arg-type]
                                                   tools=tools)  # type: ignore[arg-type]
        reply = completion.choices[0].message
        calls = reply.tool_calls or []
        messages.append({
            "role": "assistant",
            "content": reply.content,
            **({"tool_calls": [call.model_dump() for call in calls]} if calls else {}),
        })
        if not calls:
            answer = reply.content or ""
            break
        for call in calls:
            name = call.function.name  # type: ignore[union-attr]
            try:
                args = json.loads(call.function.arguments or "{}")  # type: ignore[union-attr]
            except ValueError:
                args = None
            result = (run_tool(hub, name, args, user) if isinstance(args, dict)
                      else "invalid: the arguments are not a JSON object.")
            print(f"{name} {json.dumps(args)} -> {result}", file=sys.stderr)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
            log.append(LogEntry("tool", f"{name}({json.dumps(args)}): {result}"))
    else:
        answer = "(no answer within the step limit)"
    log.append(LogEntry("assistant", answer or "(empty answer)"))
    hub.log(session.id, log)
    hub.end_session(session.id)
    return answer


def main() -> int:
    parser = argparse.ArgumentParser(description="Run one agent turn with MemoryHub memory tools.")
    parser.add_argument("--user", required=True, help="The end user's reference.")
    parser.add_argument("message", help="What the user says.")
    options = parser.parse_args()
    model = openai.OpenAI(base_url=os.environ.get("OPENAI_BASE_URL"), api_key=os.environ["OPENAI_API_KEY"],
                          timeout=60, max_retries=2)
    with MemoryHub(os.environ.get("MEMORYHUB_URL", "http://127.0.0.1:8000"),
                   os.environ["MEMORYHUB_API_KEY"]) as hub:
        print(agent_turn(hub, model, os.environ.get("OPENAI_MODEL", "gpt-4o-mini"), options.user, options.message))
    return 0


if __name__ == "__main__":
    sys.exit(main())
