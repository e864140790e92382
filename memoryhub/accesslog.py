"""Web access logs without query strings.

The API and the console put end users' references and search text in
query strings (`/api/v1/context?user=cust-7`, `/memory/search?q=…`,
`/agents/…/history/?user=…`). An access log that keeps them is a copy of
personal data, in files and log pipelines that no erasure reaches. So the
web servers log the path only: gunicorn (production) through
`GunicornLogger` (gunicorn.conf.py's `logger_class`), uvicorn (`make run`)
and Django's runserver through a filter on their access loggers, installed
when Django starts (memoryhub.apps). The referer and a redirect's Location,
which carry the same query strings, lose theirs too.

`MEMORYHUB_ACCESS_LOG_QUERY_STRINGS=1` logs them again (debugging on a
machine whose logs you treat as personal data). It is read from the
environment, not Django's settings, because gunicorn's master process logs
without loading Django. docs/compliance.md, "Access logs", says what to do
with logs written before.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from gunicorn import glogging

SETTING = "MEMORYHUB_ACCESS_LOG_QUERY_STRINGS"
# gunicorn atoms that hold a URL (the request target, referer, Location):
# kept without their query string. Those that hold only one are emptied.
_URL_ATOMS = ("f", "{referer}i", "{location}o", "{raw_uri}e", "{http_referer}e", "{request_uri}e")
_QUERY_ATOMS = ("q", "{query_string}e")


def query_strings_logged() -> bool:
    return os.environ.get(SETTING, "").strip().lower() in {"1", "true", "yes", "on"}


def without_query(target: str) -> str:
    """A path or URL without its query string (and fragment)."""
    return target.split("?", 1)[0].split("#", 1)[0]


def request_line_without_query(line: str) -> str:
    """`GET /path?x HTTP/1.1` → `GET /path HTTP/1.1` (a request target has no spaces)."""
    parts = line.split(" ")
    if len(parts) >= 2:
        parts[1] = without_query(parts[1])
    return " ".join(parts)


class GunicornLogger(glogging.Logger):  # type: ignore[misc]
    def atoms(self, resp: object, req: object, environ: object, request_time: object) -> dict[str, object]:
        atoms: dict[str, Any] = super().atoms(resp, req, environ, request_time)
        if query_strings_logged():
            return atoms
        atoms["r"] = request_line_without_query(str(atoms.get("r", "")))
        for key in _URL_ATOMS:
            if isinstance(atoms.get(key), str):
                atoms[key] = without_query(atoms[key])
        for key in _QUERY_ATOMS:
            if key in atoms:
                atoms[key] = ""
        return atoms


class UvicornAccessFilter(logging.Filter):
    """uvicorn logs `'%s - "%s %s HTTP/%s" %d'` with (client, method,
    path with query, version, status)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not query_strings_logged() and isinstance(record.args, tuple) and len(record.args) >= 3:
            args = list(record.args)
            args[2] = without_query(str(args[2]))
            record.args = tuple(args)
        return True


class RunserverAccessFilter(logging.Filter):
    """Django's runserver logs `'"%s" %s %s'` with the request line first."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not query_strings_logged() and isinstance(record.args, tuple) and record.args:
            record.args = (request_line_without_query(str(record.args[0])), *record.args[1:])
        return True


def install() -> None:
    """Attach the filters to uvicorn's and runserver's access loggers (idempotent)."""
    for name, kind in (("uvicorn.access", UvicornAccessFilter), ("django.server", RunserverAccessFilter)):
        logger = logging.getLogger(name)
        if not any(isinstance(f, kind) for f in logger.filters):
            logger.addFilter(kind())
