"""JSON written as it is read: a document made of a small header and long
lists, each list filled from a database iterator. Memory stays bounded by
one chunk, whatever the number of rows, so an export of years of logs never
sits in memory whole (subject export, agent export)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

from django.core.serializers.json import DjangoJSONEncoder

# Rows are gathered into pieces of about this many characters: one write per
# row would cost a WSGI write (and a syscall) each.
CHUNK_CHARS = 64 * 1024


def dumps(value: object) -> str:
    return json.dumps(value, cls=DjangoJSONEncoder, ensure_ascii=False)


def stream_object(header: dict[str, object], lists: Iterable[tuple[str, Iterable[dict[str, object]]]]) -> Iterator[str]:
    """`{...header, "name": [rows…], …}` in pieces. Each list's rows are
    pulled lazily, so a list may be a generator over `QuerySet.iterator()`."""
    buffer: list[str] = []
    size = 0

    def push(text: str) -> Iterator[str]:
        nonlocal size
        buffer.append(text)
        size += len(text)
        if size >= CHUNK_CHARS:
            yield "".join(buffer)
            buffer.clear()
            size = 0

    fields = 0
    yield from push("{")
    for key, value in header.items():
        yield from push(("," if fields else "") + "\n" + dumps(key) + ": " + dumps(value))
        fields += 1
    for name, rows in lists:
        yield from push(("," if fields else "") + "\n" + dumps(name) + ": [")
        fields += 1
        for position, row in enumerate(rows):
            yield from push(("," if position else "") + "\n  " + dumps(row))
        yield from push("\n]")
    yield from push("\n}\n")
    if buffer:
        yield "".join(buffer)
