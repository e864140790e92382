"""What a reviewer sees of a finding: its rule, severity and sentence, and
the words it is about, highlighted in an excerpt of the text.

Segments are built here, in Python, and the template wraps the marked one
in `<mark>`; every piece of text goes through the template's escaping, so
the text an agent wrote can never become markup.
"""

from __future__ import annotations

from dataclasses import dataclass

from memoryhub import risk, scanner

# Characters of context on each side of a highlighted span.
CONTEXT = 70
# A span longer than this is cut in the middle: the reviewer needs its
# start and end, and the full text is on the page.
MAX_MARK = 240


@dataclass(frozen=True)
class Segment:
    text: str
    marked: bool = False


@dataclass(frozen=True)
class Readable:
    """One finding as the console shows it."""

    rule: str
    category: str
    label: str
    severity: str
    detail: str
    segments: tuple[Segment, ...]
    decoded: str = ""


def excerpt(text: str, start: int, end: int, context: int = CONTEXT) -> tuple[Segment, ...]:
    """The span [start, end) of `text` marked, with some context either side
    ("…" where the excerpt cuts the text)."""
    start = max(0, min(start, len(text)))
    end = max(start, min(end, len(text)))
    if end == start and start < len(text):
        end = start + 1
    before_start = max(0, start - context)
    after_end = min(len(text), end + context)
    marked = text[start:end]
    if len(marked) > MAX_MARK:
        marked = marked[: MAX_MARK // 2] + " … " + marked[-MAX_MARK // 2 :]
    pieces = [
        Segment(("…" if before_start > 0 else "") + text[before_start:start]),
        Segment(_visible(marked), marked=True),
        Segment(text[end:after_end] + ("…" if after_end < len(text) else "")),
    ]
    return tuple(piece for piece in pieces if piece.text)


def _visible(text: str) -> str:
    """Hidden characters shown by name: a highlighted zero-width space is
    otherwise an empty highlight."""
    if text.isascii():
        return text
    names = {
        "\u200b": "[ZWSP]",
        "\u200c": "[ZWNJ]",
        "\u200d": "[ZWJ]",
        "\u2060": "[WJ]",
        "\ufeff": "[BOM]",
        "\u00ad": "[SHY]",
        "\u202e": "[RLO]",
        "\u202d": "[LRO]",
        "\u2066": "[LRI]",
        "\u2067": "[RLI]",
        "\u2068": "[FSI]",
        "\u2069": "[PDI]",
        "\u202a": "[LRE]",
        "\u202b": "[RLE]",
        "\u202c": "[PDF]",
        "\u200e": "[LRM]",
        "\u200f": "[RLM]",
        "\u3164": "[HANGUL FILLER]",
        "\uffa0": "[HALFWIDTH HANGUL FILLER]",
    }
    return "".join(names.get(c, c) for c in text)


def scanner_findings(text: str) -> list[Readable]:
    """Every scanner finding of `text`, highlighted."""
    found = []
    for finding in scanner.scan_all(text):
        start, end = scanner.raw_span(text, finding)
        found.append(
            Readable(rule=finding.rule, category=finding.category, label=finding.rule.replace("_", " "),
                     severity=finding.severity,
                     detail=finding.detail, segments=excerpt(text, start, end), decoded=finding.decoded)
        )  # fmt: skip
    return found


def first_finding(*, old: str, new: str, tags: list[str]) -> Readable | None:
    """The one finding a queue row shows: the scanner's first, else the
    first directive behind `agent_directed`."""
    if "scanner_findings" in tags:
        found = scanner_findings(new)
        if found:
            return found[0]
    if "agent_directed" in tags:
        directives = directive_findings(old=old, new=new)
        if directives:
            return directives[0]
    return None


def directive_findings(*, old: str, new: str) -> list[Readable]:
    """What earns a proposal its `agent_directed` tag: the directives the
    structure model reads in the lines it adds, highlighted in the new text."""
    found = []
    for line_start, line, directive in risk.added_directives(old=old, new=new):
        start, end = scanner.raw_span(line, directive)
        found.append(
            Readable(rule="agent_directed", category="agent_directed", label=directive.kind, severity="low",
                     detail=directive.describe(),
                     segments=excerpt(new, line_start + start, line_start + end))
        )  # fmt: skip
    return found
