"""Domain errors: a machine code, an HTTP status and a sentence for a person.

Services raise these; the API's exception handler and the HTMX views turn
them into responses. Extra keyword arguments travel to the error body
(`rule`, `limit`, `current_version`, …).
"""

from __future__ import annotations


class DomainError(Exception):
    code = "invalid"
    status = 400

    def __init__(self, detail: str, **extra: object) -> None:
        super().__init__(detail)
        self.detail = detail
        self.extra = extra

    def as_dict(self) -> dict[str, object]:
        return {"code": self.code, "detail": self.detail, **self.extra}


class Invalid(DomainError):
    code = "invalid"
    status = 400


class NotFound(DomainError):
    code = "not_found"
    status = 404


class PermissionDenied(DomainError):
    code = "permission_denied"
    status = 403


class LimitExceeded(DomainError):
    code = "limit_exceeded"
    status = 422


class UnsafeContent(DomainError):
    code = "unsafe_content"
    status = 422


class VersionConflict(DomainError):
    code = "version_conflict"
    status = 412


class FourEyes(DomainError):
    code = "four_eyes"
    status = 403


class StaleProposal(DomainError):
    code = "stale_proposal"
    status = 409


class NotPending(DomainError):
    """The proposal was already decided (or superseded); nothing to do."""

    code = "invalid"
    status = 409


class Conflict(DomainError):
    """The content still holds unresolved merge-conflict blocks."""

    code = "conflict"
    status = 409


class Ambiguous(DomainError):
    code = "ambiguous"
    status = 409


class Withheld(DomainError):
    """The file is withheld: an edit built on its text would carry the
    withheld content back into service."""

    code = "withheld"
    status = 409


class SessionExpired(DomainError):
    code = "session_expired"
    status = 410


class IdempotencyKeyReused(DomainError):
    """The Idempotency-Key was used before for a different request."""

    code = "idempotency_key_reused"
    status = 422


class NeedsSingleReview(DomainError):
    """A batch decision reached a proposal that must be read on its own
    (a persona file, scanner or personal-data findings)."""

    code = "needs_single_review"
    status = 422


class BatchTooLarge(DomainError):
    code = "batch_too_large"
    status = 422


class HighRisk(DomainError):
    """The workspace lets only an admin approve a high-risk proposal."""

    code = "high_risk"
    status = 403


class Claimed(DomainError):
    """Someone else claimed the proposal (claims are advisory for
    decisions, but a claim is not taken over silently)."""

    code = "claimed"
    status = 409


class PersonalDataUnacknowledged(DomainError):
    """A proposal carrying personal data of a special category (health, an
    official id, a card or bank number, a relative's contact data) is
    approved only by a reviewer who says they checked the agent needs it."""

    code = "personal_data"
    status = 409


class PendingReview(DomainError):
    """The text an entry operation names exists only in one of the agent's
    own proposals still waiting for review (services.pending)."""

    code = "pending_review"
    status = 409


class NoOpenSession(DomainError):
    """A note needs a session to log to, and the pair has none open."""

    code = "no_open_session"
    status = 409
