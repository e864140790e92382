"""The API's JSON body parser: bounded before anything else sees the data.

DRF's JSONParser hands any valid JSON on. Three kinds of valid JSON broke
things further in: nesting a thousand levels deep (recursion in serializers,
jsonschema and PostgreSQL's jsonb), NUL characters (PostgreSQL text and jsonb
refuse them, as a 500) and unpaired surrogates (no UTF-8 spelling, so the
database driver fails to encode them). They are refused here, for every API
body, as 400 `invalid` naming the problem; a body larger than the request
limit is 413 `too_large` without being read whole.
"""

from __future__ import annotations

import codecs
import json
import re
from typing import Any

from django.conf import settings
from rest_framework import exceptions, parsers, status

# Deeper than any body this API defines (tool schemas nest a handful of
# levels), far below Python's recursion limit.
MAX_DEPTH = 64
_SURROGATE = re.compile("[\ud800-\udfff]")


class BodyTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "too_large"


class BodyTimeout(exceptions.APIException):
    status_code = status.HTTP_408_REQUEST_TIMEOUT
    default_code = "timeout"


def max_body_bytes() -> int:
    return int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 0)


def problem_in(value: object, *, max_depth: int = MAX_DEPTH) -> str | None:
    """What makes a parsed JSON value unsafe to pass on, or None. Walks the
    value without recursion, so a deep value cannot overflow the walk."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            if depth > max_depth:
                return f"JSON nested more than {max_depth} levels deep"
            for key, child in node.items():
                stack.append((key, depth))
                stack.append((child, depth + 1))
        elif isinstance(node, list):
            if depth > max_depth:
                return f"JSON nested more than {max_depth} levels deep"
            stack.extend((child, depth + 1) for child in node)
        elif isinstance(node, str):
            if "\x00" in node:
                return "a NUL character (\\u0000) in a string"
            if _SURROGATE.search(node):
                return "an unpaired surrogate (\\ud800–\\udfff) in a string"
    return None


class StrictJSONParser(parsers.JSONParser):
    """JSONParser with a size limit, a depth limit and no NUL or unpaired
    surrogates anywhere (keys included)."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        parser_context = parser_context or {}
        encoding = parser_context.get("encoding", settings.DEFAULT_CHARSET)
        limit = max_body_bytes()
        try:
            raw = stream.read(limit + 1) if limit else stream.read()
        except OSError as exc:  # the client stopped sending (the server's read timeout)
            raise BodyTimeout("The request body stopped arriving before it was complete.") from exc
        if limit and len(raw) > limit:
            raise BodyTooLarge(f"The request body is larger than {limit:,} bytes.")
        try:
            text = codecs.decode(raw, encoding)
            data = json.loads(text, parse_constant=_refuse_constant)
        except RecursionError as exc:
            raise exceptions.ParseError(f"JSON parse error - JSON nested more than {MAX_DEPTH} levels deep.") from exc
        except (ValueError, UnicodeDecodeError) as exc:
            raise exceptions.ParseError(f"JSON parse error - {exc}") from exc
        problem = problem_in(data)
        if problem is not None:
            raise exceptions.ParseError(f"The request body contains {problem}.")
        return data


def _refuse_constant(name: str) -> object:
    raise ValueError(f"{name} is not valid JSON")
