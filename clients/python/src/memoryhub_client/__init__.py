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
    FourEyes,
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
    StaleProposal,
    Throttled,
    TimedOut,
    Unavailable,
    UnsafeContent,
    VersionConflict,
    Withheld,
)
from memoryhub_client.models import (
    ClaudeMemoryResult,
    Context,
    FileVersion,
    LogAppended,
    LogEntry,
    MemoryFile,
    Note,
    NoteSaved,
    PendingChange,
    SearchEntry,
    SearchHit,
    Section,
    Session,
    SessionEnded,
    Tool,
    Unchanged,
    WriteOutcome,
)

__all__ = [
    "ERRORS_BY_CODE", "Ambiguous", "AsyncMemoryHub", "ClaudeMemoryResult", "ConnectionFailed", "Context", "FileVersion",
    "FourEyes", "Invalid", "LimitExceeded", "LogAppended", "LogEntry", "MemoryFile", "MemoryHub", "MemoryHubError",
    "NotAuthenticated", "NotFound", "PermissionDenied", "SearchEntry", "SearchHit", "Section", "ServerError",
    "Session", "SessionEnded", "SessionExpired", "StaleProposal", "Throttled", "TimedOut", "Tool", "Unavailable",
    "Unchanged", "UnsafeContent", "VersionConflict", "Withheld", "WriteOutcome",
]
__all__ += ["NoOpenSession", "Note", "NoteSaved", "PendingChange", "PendingReview"]
