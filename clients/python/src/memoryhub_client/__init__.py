"""Typed Python client for the MemoryHub agent API.

    from memoryhub_client import MemoryHub

    with MemoryHub("http://127.0.0.1:8000", api_key="mh_…") as hub:
        context = hub.context(user="cust-1042")
        hub.add_entry("MEMORY.md", "Prefers email over phone.", user="cust-1042")
"""

from __future__ import annotations

from memoryhub_client.client import AsyncMemoryHub, MemoryHub
from memoryhub_client.errors import (
    ERRORS_BY_CODE,
    Ambiguous,
    ConnectionFailed,
    Invalid,
    LimitExceeded,
    MemoryHubError,
    NoOpenSession,
    NotAuthenticated,
    NotFound,
    PendingReview,
    PermissionDenied,
    ServerError,
    SessionExpired,
    Throttled,
    TimedOut,
    Unavailable,
    UnsafeContent,
    VersionConflict,
    Withheld,
)
from memoryhub_client.models import (
    Context,
    LogAppended,
    LogEntry,
    MemoryFile,
    Note,
    NoteSaved,
    PendingChange,
    SearchHit,
    Section,
    Session,
    SessionEnded,
    WriteOutcome,
)

__all__ = [
    "ERRORS_BY_CODE", "Ambiguous", "AsyncMemoryHub", "ConnectionFailed", "Context", "Invalid", "LimitExceeded",
    "LogAppended", "LogEntry", "MemoryFile", "MemoryHub", "MemoryHubError", "NotAuthenticated", "NotFound",
    "PermissionDenied", "SearchHit", "Section", "ServerError", "Session", "SessionEnded", "SessionExpired",
    "Throttled", "TimedOut", "Unavailable", "UnsafeContent", "VersionConflict", "Withheld", "WriteOutcome",
]
__all__ += ["NoOpenSession", "Note", "NoteSaved", "PendingChange", "PendingReview"]
