"""Entry-level memory operations: add one entry, replace or remove the one
entry that contains a piece of text.

An agent changes one fact without resending the whole file, and two such
calls never overwrite each other: the new content is built from the file
under its row lock, inside `edit_memory`, the path of every agent write, so
every rule of a whole-file write (scope, limits, scanner, write policy,
If-Match, audit) applies to the result unchanged.

Entries are split the way context assembly serves them
(`context.split_entries`): a list item, a heading or a paragraph.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from memoryhub import context, errors
from memoryhub.models import Agent, MemoryFile
from memoryhub.services.limits import validate_content, validate_target
from memoryhub.services.memory import WriteResult, edit_memory
from memoryhub.services.pending import raise_if_only_pending

ENTRY_MAX = 20_000
PREVIEW_CHARS = 80

_LIST_MARKER = re.compile(r"^(\s*(?:[-*+]|\d+[.)])\s)")


def _is_blank(entry: str) -> bool:
    return not entry.strip()


def validate_entry_text(value: object, *, field: str, label: str) -> str:
    """One entry: text, not empty, and not several entries (a blank line or
    a second list item inside would make the file hold two)."""
    if not isinstance(value, str):
        raise errors.Invalid(f"{label} must be a string.", field=field)
    text = validate_content(value, field=field).strip()
    if not text:
        raise errors.Invalid(f"{label} is empty; send the text of one entry.", field=field)
    if len(text) > ENTRY_MAX:
        raise errors.Invalid(f"{label} has at most {ENTRY_MAX:,} characters; this one has {len(text):,}.",
                             field=field)
    parts = [entry for entry in context.split_entries(text) if not _is_blank(entry)]
    if len(parts) > 1:
        raise errors.Invalid(
            f"{label} holds {len(parts)} entries (list items, headings or paragraphs split by a blank line); "
            "send one per call.",
            field=field,
        )
    return text


def validate_needle(value: object, *, field: str = "old_text") -> str:
    if not isinstance(value, str):
        raise errors.Invalid("old_text must be a string: part of the entry to change, quoted exactly.", field=field)
    needle = validate_content(value, field=field).strip()
    if not needle:
        raise errors.Invalid("old_text is empty; quote part of the entry to change exactly.", field=field)
    if len(needle) > ENTRY_MAX:
        raise errors.Invalid(f"old_text has at most {ENTRY_MAX:,} characters.", field=field)
    return needle


# --- building the new content (pure) --------------------------------------------------


def _marker_of(entry: str) -> str | None:
    match = _LIST_MARKER.match(entry)
    return match.group(1) if match else None


def _starts_entry(text: str) -> bool:
    return len(context.split_entries("x\n" + text)) > 1


def _shaped_like(text: str, neighbour: str | None) -> str:
    """The text as an entry in the file's own style: a bare sentence next to
    a list item becomes a list item with the same marker, so it neither
    glues onto the item above nor breaks the list."""
    if neighbour is None or _starts_entry(text):
        return text
    marker = _marker_of(neighbour)
    if marker is not None:
        return marker.lstrip() + text
    return text


def with_entry_added(content: str, text: str) -> str | None:
    """The content with `text` added as its last entry; None when an entry
    with exactly that text is already there (adding is idempotent, so a
    retried call never writes a fact twice)."""
    entries = context.split_entries(content)
    filled = [entry for entry in entries if not _is_blank(entry)]
    last = filled[-1] if filled else None
    entry = _shaped_like(text, last)
    if any(existing.strip() in (text, entry) for existing in filled):
        return None
    if not content.strip():
        return entry + "\n"
    body = content if content.endswith("\n") else content + "\n"
    if not _starts_entry(entry) or (last is not None and _marker_of(last) is None):
        # Two paragraphs are told apart by a blank line, and so is a
        # paragraph that follows a list.
        body = body.rstrip("\n") + "\n\n"
    return body + entry + "\n"


def _matching(entries: list[str], needle: str, *, kind: str) -> list[int]:
    matches = [index for index, entry in enumerate(entries) if not _is_blank(entry) and needle in entry]
    if not matches:
        raise errors.NotFound(
            f"No entry of {kind} contains {_quoted(needle)}. Read the file and quote part of one entry exactly "
            "(the text must lie within a single entry)."
        )
    if len({entries[index].strip() for index in matches}) > 1:
        previews = [_preview(entries[index]) for index in matches]
        raise errors.Ambiguous(
            f"{len(matches)} entries of {kind} contain {_quoted(needle)}; quote more of the one you mean.",
            matches=previews,
        )
    # Several identical entries are one fact written twice: the operation
    # applies to all of them (a remove leaves no copy, a replace no stale one).
    return matches


def _quoted(text: str) -> str:
    short = text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"
    return f'"{short}"'


def _preview(entry: str) -> str:
    served = context.serve_untrusted(entry.strip()).text
    return served if len(served) <= PREVIEW_CHARS else served[: PREVIEW_CHARS - 1] + "…"


def _drop(entries: list[str], indexes: list[int]) -> str:
    """The entries without those at `indexes`. A removed paragraph's
    separating blank line goes with it, so no double blank line and no
    blank first or last line is left where it stood; the rest of the file
    keeps its formatting byte for byte."""
    drop = set(indexes)
    for index in indexes:
        before, after = index - 1, index + 1
        while before in drop:
            before -= 1
        while after in drop:
            after += 1
        has_before, has_after = before >= 0, after < len(entries)
        if has_after and _is_blank(entries[after]) and (not has_before or _is_blank(entries[before])):
            drop.add(after)
        elif has_before and _is_blank(entries[before]) and not has_after:
            drop.add(before)
    return "".join(entry for index, entry in enumerate(entries) if index not in drop)


def with_entry_replaced(content: str, needle: str, text: str, *, kind: str) -> str:
    entries = context.split_entries(content)
    matches = _matching(entries, needle, kind=kind)
    first = matches[0]
    old = entries[first]
    marker = _marker_of(old)
    new = text if marker is None or _starts_entry(text) else marker + text
    entries[first] = new + ("\n" if old.endswith("\n") else "")
    return _drop(entries, matches[1:]) if len(matches) > 1 else "".join(entries)


def with_entry_removed(content: str, needle: str, *, kind: str) -> str:
    entries = context.split_entries(content)
    return _drop(entries, _matching(entries, needle, kind=kind))


# --- the operations -------------------------------------------------------------------


def _edit(
    *,
    agent: Agent,
    kind: str,
    user_ref: str | None,
    reason: object,
    expected_version: int | None,
    operation: str,
    build: Callable[[str], str | None],
) -> WriteResult:
    def build_on(file: MemoryFile | None) -> str | None:
        if file is not None and file.is_withheld:
            # Built on withheld text, the new content would carry it back
            # into service on one reviewer's approval; it takes two.
            raise errors.Withheld(
                f"{file.kind} is withheld by a reviewer, so its entries cannot be edited. Write the whole file "
                "instead (it goes to review), or wait until it is released."
            )
        return build(file.content if file else "")

    return edit_memory(agent=agent, kind=kind, user_ref=user_ref, build=build_on, reason=reason,
                       expected_version=expected_version, operation=operation)


def _or_pending(*, agent: Agent, kind: str, user_ref: str | None, needle: str,
                build: Callable[[str], str]) -> Callable[[str], str]:
    """`build`, with a not_found for text that only the agent's own pending
    proposal holds turned into 409 pending_review naming it."""
    def built(content: str) -> str:
        try:
            return build(content)
        except errors.NotFound:
            target_kind, target_user = validate_target(kind=kind, user_ref=user_ref)
            raise_if_only_pending(agent=agent, kind=target_kind, user_ref=target_user, needle=needle)
            raise
    return built


def add_entry(
    *,
    agent: Agent,
    kind: str,
    user_ref: str | None = None,
    text: object,
    reason: object = "",
    expected_version: int | None = None,
) -> WriteResult:
    """Add one entry at the end of the file (the agent is the acting
    principal). Adding an entry that is already there changes nothing."""
    text = validate_entry_text(text, field="text", label="The text")
    return _edit(agent=agent, kind=kind, user_ref=user_ref, reason=reason, expected_version=expected_version,
                 operation="add", build=lambda content: with_entry_added(content, text))


def replace_entry(
    *,
    agent: Agent,
    kind: str,
    user_ref: str | None = None,
    old_text: object,
    new_text: object,
    reason: object = "",
    expected_version: int | None = None,
) -> WriteResult:
    """Replace the one entry containing `old_text` with `new_text` (the whole
    entry; a list item keeps its marker). NotFound when no entry contains
    it, Ambiguous when several different ones do."""
    needle = validate_needle(old_text)
    text = validate_entry_text(new_text, field="new_text", label="new_text")
    return _edit(agent=agent, kind=kind, user_ref=user_ref, reason=reason, expected_version=expected_version,
                 operation="replace",
                 build=_or_pending(agent=agent, kind=kind, user_ref=user_ref, needle=needle,
                                   build=lambda content: with_entry_replaced(content, needle, text, kind=kind)))


def remove_entry(
    *,
    agent: Agent,
    kind: str,
    user_ref: str | None = None,
    old_text: object,
    reason: object = "",
    expected_version: int | None = None,
) -> WriteResult:
    """Remove the one entry containing `old_text` (same NotFound/Ambiguous
    as replace). Removing the last entry leaves the file absent."""
    needle = validate_needle(old_text)
    return _edit(agent=agent, kind=kind, user_ref=user_ref, reason=reason, expected_version=expected_version,
                 operation="remove",
                 build=_or_pending(agent=agent, kind=kind, user_ref=user_ref, needle=needle,
                                   build=lambda content: with_entry_removed(content, needle, kind=kind)))
