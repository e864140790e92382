"""API errors as exceptions, one class per error code.

Every MemoryHub error body is `{"error": {"code", "detail", …}}`; the client
raises the class registered for `code` (or `MemoryHubError` for a code it
does not know), with the extra keys of the body in `extra`.
"""

from __future__ import annotations

from typing import Any


class MemoryHubError(Exception):
    """An answer the API refused. `code` is the machine code, `detail` the
    sentence for a person, `status` the HTTP status."""

    code = "error"

    def __init__(self, detail: str, *, status: int = 0, code: str | None = None,
                 extra: dict[str, Any] | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.status = status
        if code is not None:
            self.code = code
        self.extra: dict[str, Any] = dict(extra or {})

    def __str__(self) -> str:
        return f"{self.code} ({self.status}): {self.detail}" if self.status else f"{self.code}: {self.detail}"


class Invalid(MemoryHubError):
    code = "invalid"

    @property
    def field(self) -> str | None:
        value = self.extra.get("field")
        return value if isinstance(value, str) else None


class NotAuthenticated(MemoryHubError):
    code = "not_authenticated"


class PermissionDenied(MemoryHubError):
    code = "permission_denied"


class NotFound(MemoryHubError):
    code = "not_found"


class LimitExceeded(MemoryHubError):
    code = "limit_exceeded"


class UnsafeContent(MemoryHubError):
    code = "unsafe_content"

    @property
    def rule(self) -> str | None:
        value = self.extra.get("rule")
        return value if isinstance(value, str) else None


class VersionConflict(MemoryHubError):
    code = "version_conflict"

    @property
    def current_version(self) -> int | None:
        value = self.extra.get("current_version")
        return value if isinstance(value, int) else None


class Ambiguous(MemoryHubError):
    code = "ambiguous"

    @property
    def matches(self) -> list[str]:
        value = self.extra.get("matches")
        return [str(item) for item in value] if isinstance(value, list) else []


class Withheld(MemoryHubError):
    code = "withheld"


class FourEyes(PermissionDenied):
    """Staff: whoever made a proposal or change cannot decide it."""

    code = "four_eyes"


class StaleProposal(MemoryHubError):
    """Staff: the file moved past the proposal's base version; rebase it."""

    code = "stale_proposal"


class SessionExpired(MemoryHubError):
    code = "session_expired"


class PendingReview(MemoryHubError):
    """An entry operation named text that exists only in this agent's own
    proposal waiting for review; `proposal` is its id."""

    code = "pending_review"

    @property
    def proposal(self) -> int | None:
        value = self.extra.get("proposal")
        return value if isinstance(value, int) else None


class NoOpenSession(MemoryHubError):
    """A note without `session` found no open session with that user."""

    code = "no_open_session"


class _RetryAfter(MemoryHubError):
    """A refusal that names when to come back (the body's `retry_after`)."""

    @property
    def retry_after(self) -> float | None:
        value = self.extra.get("retry_after")
        return float(value) if isinstance(value, int | float) else None


class Throttled(_RetryAfter):
    """Still throttled after the client's retries."""

    code = "throttled"


class ServerError(MemoryHubError):
    """A 5xx, or an answer that is not the API's JSON."""

    code = "server_error"


class Unavailable(_RetryAfter, ServerError):
    """503: the server's database is down or too slow right now; nothing
    was changed. Raised once the client's retries after Retry-After are
    spent."""

    code = "unavailable"


class ConnectionFailed(MemoryHubError):
    """No answer from the server: it could not be reached, the connection
    broke, or it did not answer in time. `may_have_arrived` says whether the
    request could have reached the server (then a write may have been
    applied: send it again with the same `idempotency_key` to be sure it is
    applied once). Not an API error code: `status` is 0."""

    code = "connection_failed"

    def __init__(self, detail: str, *, may_have_arrived: bool) -> None:
        super().__init__(detail)
        self.may_have_arrived = may_have_arrived


class TimedOut(ConnectionFailed):
    """The server did not answer (or accept the connection) within the
    client's timeout."""

    code = "timeout"


ERRORS_BY_CODE: dict[str, type[MemoryHubError]] = {
    cls.code: cls
    for cls in (Invalid, NotAuthenticated, PermissionDenied, NotFound, LimitExceeded, UnsafeContent,
                VersionConflict, Ambiguous, Withheld, SessionExpired, Throttled, ServerError, Unavailable,
                PendingReview, NoOpenSession, FourEyes, StaleProposal)
}


def error_for(status: int, body: Any) -> MemoryHubError:
    """The exception for an error answer."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict) or not isinstance(error.get("code"), str):
        return ServerError(f"The server answered HTTP {status} without an API error body.", status=status)
    code = error["code"]
    detail = str(error.get("detail", ""))
    extra = {key: value for key, value in error.items() if key not in ("code", "detail")}
    cls = ERRORS_BY_CODE.get(code, ServerError if status >= 500 else MemoryHubError)
    return cls(detail, status=status, code=code, extra=extra)
