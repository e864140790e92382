"""USER.md and MEMORY.md as lists of entries, and back.

One entry per markdown list item. Files written by hand or by an agent may
hold other lines too; they are kept rather than lost:

- a list item (`- `, `* `, `+ `, `1. `, `1) `) becomes its text;
- an indented line right after an item continues that item (joined by a space);
- a heading (`# …`) stays an entry, verbatim, and renders as a heading again;
- any other non-blank line becomes an entry of its own;
- blank lines separate nothing and are dropped.

`render` writes one `- entry` line per entry, so `parse(render(e)) == e` for
normalised entries and `render(parse(render(parse(x)))) == render(parse(x))`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_ITEM = re.compile(r"^\s{0,3}(?:[-*+]|\d{1,9}[.)])\s+(.*)$")
_BARE_MARKER = re.compile(r"^\s{0,3}(?:[-*+]|\d{1,9}[.)])\s*$")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")


def normalise(entry: str) -> str:
    """One line, no surrounding or repeated whitespace."""
    return " ".join(entry.split())


def is_heading(entry: str) -> bool:
    return bool(_HEADING.match(entry))


def parse(content: str) -> tuple[str, ...]:
    entries: list[str] = []
    in_item = False
    for line in content.splitlines():
        if not line.strip() or _BARE_MARKER.match(line):
            in_item = False
            continue
        item = _ITEM.match(line)
        if item:
            entries.append(normalise(item.group(1)))
            in_item = True
        elif _HEADING.match(line):
            entries.append(normalise(line))
            in_item = False
        elif in_item and line[:1] in (" ", "\t"):
            entries[-1] = normalise(entries[-1] + " " + line)
        else:
            entries.append(normalise(line))
            in_item = False
    return tuple(entry for entry in entries if entry)


def render(entries: Iterable[str]) -> str:
    """Markdown as people write it: a blank line around each heading, so a
    consolidation diff shows the changed entries and not layout noise."""
    lines: list[str] = []
    for entry in entries:
        text = normalise(entry)
        if not text:
            continue
        if is_heading(text):
            if lines:
                lines.append("\n")
            lines.append(f"{text}\n\n")
        else:
            lines.append(f"- {text}\n")
    return "".join(lines)
