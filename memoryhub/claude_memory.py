"""Claude's memory tool (`memory_20250818`) backed by MemoryHub.

Anthropic's memory tool is client-side: the model sends file commands
(`view`, `create`, `str_replace`, `insert`, `delete`, `rename`) on paths
under `/memories`, and the application answers each with text. Here the
five memory files are that directory — `/memories/SOUL.md` …
`/memories/MEMORY.md` — and every command is a thin call of the services
every other agent write goes through (`services.read_memory`,
`services.write_memory`, and the entry operations' `_edit`, which builds
the new content under the file's row lock and refuses to build on
withheld text): limits, scanner, write policy, If-Match and audit apply
unchanged, and a write under `review` becomes a proposal.

Answers follow the anthropic SDK's own reference backend
(`anthropic.lib.tools.BetaLocalFilesystemMemoryTool`) word for word where
they mean the same, so a model trained on that tool reads them as usual.
What the model cannot have here — another path, `rename`, `delete` of a
file, `create` over a file that holds text — is refused with an error that
lists the files that exist.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memoryhub import context, errors, services
from memoryhub.models import Agent, FileKind
from memoryhub.services.entries import _edit as edit_on_content
from memoryhub.services.entries import _or_pending as or_pending

ROOT = "/memories"
COMMANDS = ("view", "create", "str_replace", "insert", "delete", "rename")
WRITES = ("create", "str_replace", "insert")
AGENT_FILES = (FileKind.SOUL, FileKind.ABOUT, FileKind.TOOLS)
USER_FILES = (FileKind.USER, FileKind.MEMORY)
LINE_NUMBER_WIDTH = 6  # the SDK's: len(str(999_999))
WHAT_EACH_HOLDS = {
    FileKind.SOUL: "who you are",
    FileKind.ABOUT: "your profile",
    FileKind.TOOLS: "notes on your tools",
    FileKind.USER: "what you know about this user",
    FileKind.MEMORY: "long-term memory for this user",
}


class Unsupported(errors.DomainError):
    """A command or path the memory tool cannot have here."""

    code = "unsupported"
    status = 400


class AlreadyExists(errors.DomainError):
    code = "already_exists"
    status = 409


@dataclass(frozen=True)
class Answer:
    """What the tool hands the model (`result`), and the write's outcome
    for the API answer (`write` is None for a view)."""

    result: str
    write: services.WriteResult | None = None
    file: str | None = None
    version: int | None = None
    files: list[str] = field(default_factory=list)


def files_for(user_ref: str | None) -> tuple[str, ...]:
    return (*AGENT_FILES, *USER_FILES) if user_ref is not None else AGENT_FILES


def path_of(kind: str) -> str:
    return f"{ROOT}/{kind}"


def _listing(user_ref: str | None) -> str:
    names = ", ".join(path_of(kind) for kind in files_for(user_ref))
    if user_ref is None:
        names += f" ({FileKind.USER} and {FileKind.MEMORY} need the user: pass ?user=<user_ref>)"
    return names


def _refuse(cls: type[errors.DomainError], text: str, *, user_ref: str | None, **extra: object) -> errors.DomainError:
    """An error whose sentence ends with what exists, as the tool's errors
    should: the model can pick a real path on its next call."""
    return cls(f"{text} The memory directory holds exactly these files: {_listing(user_ref)}.",
               files=[path_of(kind) for kind in files_for(user_ref)], **extra)


def _is_root(path: str) -> bool:
    return path.rstrip("/") == ROOT


def kind_of(path: object, *, user_ref: str | None, command: str) -> str:
    """The memory file a `/memories/…` path names, or an error listing the
    files there are."""
    if not isinstance(path, str) or not path:
        raise errors.Invalid(f"{command} needs a path under {ROOT}, like {path_of(FileKind.MEMORY)}.", field="path")
    name = path[len(ROOT) + 1:] if path.startswith(ROOT + "/") else None
    if name in FileKind.values and (name in AGENT_FILES or user_ref is not None):
        return name
    if name in USER_FILES:
        raise errors.Invalid(f"{path} is kept per user: pass the end user as ?user=<user_ref>.", field="user")
    if not path.startswith(ROOT):
        raise _refuse(errors.NotFound, f"Path must start with {ROOT}, got: {path}.", user_ref=user_ref)
    if command == "create":
        raise _refuse(Unsupported, f"Cannot create {path}: no new files can be made here.", user_ref=user_ref)
    raise _refuse(errors.NotFound, f"The path {path} does not exist. Please provide a valid path.", user_ref=user_ref)


# --- view -------------------------------------------------------------------------------------


def _size(text: str) -> str:
    """A size as the SDK's reference backend prints it (`1.5K`)."""
    size = len(text.encode())
    if size == 0:
        return "0B"
    unit = min((size.bit_length() - 1) // 10, 3)
    value = size / 1024**unit
    return f"{int(value) if value == int(value) else round(value, 1)}{'BKMG'[unit]}"


def _served(agent: Agent, kind: str, user_ref: str | None) -> tuple[services.FileView, str]:
    view = services.read_memory(agent=agent, kind=kind, user_ref=user_ref if kind in USER_FILES else None)
    return view, context.serve_file(content=view.content, withheld=view.withheld).text


def view(*, agent: Agent, user_ref: str | None, path: object, view_range: object = None) -> Answer:
    if isinstance(path, str) and _is_root(path):
        served = [(kind, _served(agent, kind, user_ref)[1]) for kind in files_for(user_ref)]
        lines = [f"{_size(''.join(text for _, text in served))}\t{ROOT}"]
        lines += [f"{_size(text)}\t{path_of(kind)}" for kind, text in served]
        return Answer(f"Here're the files and directories up to 2 levels deep in {ROOT}, excluding hidden items:\n"
                      + "\n".join(lines), files=[path_of(kind) for kind in files_for(user_ref)])
    kind = kind_of(path, user_ref=user_ref, command="view")
    file, text = _served(agent, kind, user_ref)
    usage = services.usage_line(kind=kind, chars=file.chars, limit=file.limit)
    if not file.exists:
        return Answer(f"The file {path} is empty: nothing is stored yet ({usage}). Use create to write it.",
                      file=kind, version=file.version)
    lines = text.split("\n")
    start, shown = 1, lines
    if view_range is not None:
        if (not isinstance(view_range, list) or len(view_range) != 2
                or not all(isinstance(n, int) and not isinstance(n, bool) for n in view_range)):
            raise errors.Invalid("view_range must be two line numbers, [first, last] (last -1 for the end).",
                                 field="view_range")
        start = max(1, view_range[0])
        shown = lines[start - 1:len(lines) if view_range[1] == -1 else view_range[1]]
    numbered = "\n".join(f"{str(number).rjust(LINE_NUMBER_WIDTH)}\t{line}"
                         for number, line in enumerate(shown, start=start))
    if file.withheld:
        numbered += "\n(a reviewer took this version out of service)"
    body = context.as_data(agent=agent, kind=kind, text=numbered)
    return Answer(f"Here's the content of {path} with line numbers ({usage} · version {file.version}):\n{body}",
                  file=kind, version=file.version)


# --- writes (pure builders, run under the file's row lock) ------------------------------------


def with_text_replaced(content: str, old: str, new: str, *, path: str) -> str:
    count = content.count(old)
    if count == 0:
        raise errors.NotFound(f"No replacement was performed, old_str `{old}` did not appear verbatim in {path}.")
    if count > 1:
        lines, start = [], 0
        while (found := content.find(old, start)) != -1:
            lines.append(content[:found].count("\n") + 1)
            start = found + 1
        raise errors.Ambiguous(
            f"No replacement was performed. Multiple occurrences of old_str `{old}` in lines: "
            f"{', '.join(map(str, lines))}. Please ensure it is unique", lines=lines)
    return content.replace(old, new)


def with_lines_inserted(content: str, line: int, text: str) -> str:
    lines = content.split("\n")
    if lines[-1] == "":
        lines.pop()
    if line < 0 or line > len(lines):
        raise errors.Invalid(f"Invalid `insert_line` parameter: {line}. It should be within the range "
                             f"[0, {len(lines)}].", field="insert_line")
    lines.insert(line, text.rstrip("\n"))
    return "\n".join(lines) + "\n"


def _snippet(content: str, old: str, new: str, result: str) -> str:
    """The SDK's answer to a str_replace: the changed line with two lines of
    context either side, numbered."""
    at = content.find(old)
    changed = content[:at].count("\n") if at >= 0 else 0
    lines = result.split("\n")
    first, last = max(0, changed - 2), min(len(lines), changed + 3 + new.count("\n"))
    return "\n".join(f"{str(n + 1).rjust(LINE_NUMBER_WIDTH)}\t{lines[n]}" for n in range(first, last))


def _text(value: object, name: str, command: str, *, blank: bool = True) -> str:
    if not isinstance(value, str):
        raise errors.Invalid(f"{command} needs `{name}` (a string).", field=name)
    if not blank and not value:
        raise errors.Invalid(f"`{name}` is empty; quote the text to replace exactly.", field=name)
    return value


def _pending(path: str, result: services.WriteResult) -> str:
    assert result.proposal is not None
    if result.duplicate:
        return (f"The same change to {path} is already waiting for review as proposal #{result.proposal.pk} "
                "(pending); nothing new was filed. Nothing is served until a person approves it.")
    return (f"The change to {path} was sent for review as proposal #{result.proposal.pk} (pending): nothing is "
            "served until a person approves it, so viewing the file still shows the approved version.")


def _written(agent: Agent, kind: str, path: str, result: services.WriteResult, done: str) -> Answer:
    if result.proposal is not None:
        text = _pending(path, result)
    elif not result.changed:
        text = f"{path} already says that; nothing changed (version {result.version})."
    else:
        text = f"{done} ({services.usage_line(kind=kind, chars=result.chars, limit=agent.limit_for(kind))} · " \
               f"version {result.version})"
    if result.warning:
        text += f"\n{result.warning}"
    return Answer(text, write=result, file=kind, version=result.version)


def create(*, agent: Agent, user_ref: str | None, path: Any, file_text: object, reason: str,
           expected_version: int | None) -> Answer:
    kind = kind_of(path, user_ref=user_ref, command="create")
    text = _text(file_text, "file_text", "create")

    def build(content: str) -> str:
        if content:
            # The SDK's answer for a file that exists: a whole-file create
            # would silently drop what is there. Edits go by str_replace/insert.
            raise _refuse(AlreadyExists, f"File {path} already exists. Change it with str_replace or insert "
                          "(view it first).", user_ref=user_ref)
        return text

    result = edit_on_content(agent=agent, kind=kind, user_ref=_user(kind, user_ref), reason=reason,
                             expected_version=expected_version, operation="write", build=build)
    return _written(agent, kind, path, result, f"File created successfully at: {path}")


def _user(kind: str, user_ref: str | None) -> str | None:
    return user_ref if kind in USER_FILES else None


def str_replace(*, agent: Agent, user_ref: str | None, path: Any, old_str: object, new_str: object, reason: str,
                expected_version: int | None) -> Answer:
    kind = kind_of(path, user_ref=user_ref, command="str_replace")
    old = _text(old_str, "old_str", "str_replace", blank=False)
    new = _text(new_str, "new_str", "str_replace")
    seen: dict[str, str] = {}

    def build(content: str) -> str:
        if not content:
            raise errors.NotFound(f"No replacement was performed, old_str `{old}` did not appear verbatim in "
                                  f"{path}: the file is empty.")
        seen["before"] = content
        seen["after"] = with_text_replaced(content, old, new, path=path)
        return seen["after"]

    # Text the agent wrote under `review` lives only in its pending proposal:
    # 409 pending_review naming it, as the entry operations answer.
    result = edit_on_content(agent=agent, kind=kind, user_ref=_user(kind, user_ref), reason=reason,
                             expected_version=expected_version, operation="str_replace",
                             build=or_pending(agent=agent, kind=kind, user_ref=_user(kind, user_ref), needle=old,
                                              build=build))
    done = ("The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
            + _snippet(seen["before"], old, new, seen["after"]))
    return _written(agent, kind, path, result, done)


def insert(*, agent: Agent, user_ref: str | None, path: Any, insert_line: object, insert_text: object, reason: str,
           expected_version: int | None) -> Answer:
    kind = kind_of(path, user_ref=user_ref, command="insert")
    if not isinstance(insert_line, int) or isinstance(insert_line, bool):
        raise errors.Invalid("insert needs `insert_line`, the line number to insert after (0 for the top).",
                             field="insert_line")
    text = _text(insert_text, "insert_text", "insert")
    result = edit_on_content(agent=agent, kind=kind, user_ref=_user(kind, user_ref), reason=reason,
                             expected_version=expected_version, operation="insert",
                             build=lambda content: with_lines_inserted(content, insert_line, text))
    return _written(agent, kind, path, result, f"The file {path} has been edited.")


def run(*, agent: Agent, user_ref: str | None, command: dict[str, object],
        expected_version: int | None = None) -> Answer:
    """One memory tool command, as the agent (the acting principal)."""
    name = command.get("command")
    reason = f"Claude memory tool: {name}"
    if name == "view":
        return view(agent=agent, user_ref=user_ref, path=command.get("path"), view_range=command.get("view_range"))
    if name == "create":
        return create(agent=agent, user_ref=user_ref, path=command.get("path"), file_text=command.get("file_text"),
                      reason=reason, expected_version=expected_version)
    if name == "str_replace":
        return str_replace(agent=agent, user_ref=user_ref, path=command.get("path"), old_str=command.get("old_str"),
                           new_str=command.get("new_str"), reason=reason, expected_version=expected_version)
    if name == "insert":
        return insert(agent=agent, user_ref=user_ref, path=command.get("path"),
                      insert_line=command.get("insert_line"), insert_text=command.get("insert_text"),
                      reason=reason, expected_version=expected_version)
    if name == "delete":
        path = command.get("path")
        if isinstance(path, str) and not _is_root(path):
            kind_of(path, user_ref=user_ref, command="delete")  # a path that is not a file: "does not exist"
        raise _refuse(Unsupported, f"Cannot delete {path}: the memory files are kept, with their history. To take "
                      "text out, use str_replace with an empty new_str.", user_ref=user_ref)
    if name == "rename":
        raise _refuse(Unsupported, f"Cannot rename {command.get('old_path')}: the memory files have fixed names.",
                      user_ref=user_ref)
    raise errors.Invalid(f"command must be one of {', '.join(COMMANDS)}.", field="command")
