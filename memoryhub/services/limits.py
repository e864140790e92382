"""The checks every write shares: names, scopes, content, size limits and
the scanner. Context assembly uses the same limit wording, which is why these
live apart from the write operations (no context ↔ services import cycle)."""

from __future__ import annotations

import unicodedata

from memoryhub import errors, metrics, scanner
from memoryhub.models import AGENT_SCOPED, SOFT_LIMITED, Agent, FileKind

# A soft-limited file may grow past its cap (the agent is told to compress),
# but not without bound: past this multiple the write is refused.
SOFT_LIMIT_CEILING = 2
USER_REF_MAX = 255
_ALLOWED_CONTROL = frozenset("\n\r\t")


def validate_user_ref(user_ref: object) -> str:
    """1–255 printable characters, NFC-normalised: "José" typed on two
    keyboards (composed or decomposed) is one user, not two."""
    if not isinstance(user_ref, str):
        raise errors.Invalid("The user reference must be text.", field="user")
    normal = unicodedata.normalize("NFC", user_ref)
    if not (1 <= len(normal) <= USER_REF_MAX) or not normal.isprintable():
        raise errors.Invalid("The user reference must be 1–255 printable characters.", field="user")
    return normal


def validate_target(*, kind: str, user_ref: str | None) -> tuple[str, str]:
    """Check that the file name is known and the user scope fits it.
    Returns (kind, user_ref) with user_ref "" for agent-scoped files."""
    if kind not in FileKind.values:
        names = ", ".join(FileKind.values)
        raise errors.NotFound(f"There is no memory file named {kind!r}; the files are {names}.")
    if kind in AGENT_SCOPED:
        if user_ref:
            raise errors.Invalid(
                f"{kind} belongs to the agent and is shared by all its users; do not pass a user.", field="user"
            )
        return kind, ""
    if not user_ref:
        raise errors.Invalid(f"{kind} belongs to one user of the agent: pass ?user=<user_ref>.", field="user")
    return kind, validate_user_ref(user_ref)


def validate_content(content: object, *, field: str = "content") -> str:
    if not isinstance(content, str):
        raise errors.Invalid("Content must be a string of markdown.", field=field)
    bad = next((ch for ch in content if ord(ch) < 32 and ch not in _ALLOWED_CONTROL), None)
    if bad is not None:
        raise errors.Invalid(
            f"Content contains the control character U+{ord(bad):04X}; only newlines and tabs are allowed.",
            field=field,
        )
    return content


def validate_text(value: object, *, field: str, label: str, max_length: int, required: bool = False) -> str:
    """A free-text field (reason, comment): text, printable apart from line
    breaks, bounded. NUL and other control characters are refused here so
    they never reach a text or jsonb column."""
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise errors.Invalid(f"{label} must be text.", field=field)
    text = validate_content(value, field=field).strip()
    if required and not text:
        raise errors.Invalid(f"{label} is required.", field=field)
    if len(text) > max_length:
        raise errors.Invalid(f"{label} has at most {max_length:,} characters; this one has {len(text):,}.",
                             field=field)
    return text


def check_limit(*, agent: Agent, kind: str, content: str) -> str | None:
    """Refuse content over a hard cap; return the compress warning for
    content over a soft cap (None when within it)."""
    limit = agent.limit_for(kind)
    chars = len(content)
    if kind in SOFT_LIMITED:
        ceiling = limit * SOFT_LIMIT_CEILING
        if chars > ceiling:
            raise errors.LimitExceeded(
                f"{kind} may go past its soft limit of {limit:,} characters, but not past {ceiling:,}; "
                f"this content has {chars:,}. Compress it before writing.",
                limit=limit,
                chars=chars,
                limit_kind="soft",
            )
        if chars > limit:
            return compress_warning(kind=kind, chars=chars, limit=limit)
        return None
    if chars > limit:
        raise errors.LimitExceeded(
            f"{kind} is limited to {limit:,} characters; this content has {chars:,}. Shorten it and write again.",
            limit=limit,
            chars=chars,
            limit_kind="hard",
        )
    return None


def compress_warning(*, kind: str, chars: int, limit: int) -> str:
    return (
        f"{kind} is over its soft limit: {chars:,}/{limit:,} characters ({chars * 100 // limit}%). "
        "Compress it now: merge duplicate entries, drop expired or stale ones, and keep detail in the session log."
    )


def usage_line(*, kind: str, chars: int, limit: int) -> str:
    percent = chars * 100 // limit if limit else 0
    return f"{kind} — {percent}% · {chars:,}/{limit:,} chars"


PII_POLICIES = ("allow", "flag", "refuse")


def check_pii(*, agent: Agent, content: str) -> list[dict[str, str]]:
    """Personal data in a memory write, under the workspace's policy: refused
    (422 unsafe_content naming the rule), or returned for the caller to
    record (`flag`), or ignored (`allow`)."""
    policy = agent.workspace.pii_policy
    if policy == "allow" or not content:
        return []
    findings = scanner.scan_pii(content)
    if not findings:
        return []
    if policy == "refuse":
        first = findings[0]
        metrics.count_refusal(first.rule)
        raise errors.UnsafeContent(
            f"Refused: this workspace does not keep personal data in memory ({first.rule}): {first.detail}",
            rule=first.rule,
        )
    return [{"rule": f.rule, "detail": f.detail} for f in findings]


def check_safe(content: str) -> None:
    finding = scanner.scan(content)
    if finding is not None:
        metrics.count_refusal(finding.rule)
        raise errors.UnsafeContent(
            f"Refused by the memory scanner ({finding.rule}): {finding.detail}", rule=finding.rule
        )
