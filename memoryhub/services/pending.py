"""Read your own writes under `review`: an agent's pending proposals on a
file, as the agent itself sees them.

Under the `review` policy an agent's write becomes a proposal and nothing
served changes. Without this the agent that just wrote a fact cannot see
it, and a `replace` of that fact answered `not_found`. So the memory read
(REST and `memory_view`) lists the calling agent's own pending proposals on
the file in a separate, marked part (id, when, the entries it adds and
removes), never in the served content; and an entry operation on text that
exists only there answers 409 `pending_review` naming the proposal.

Decision: such an operation does not amend the pending proposal. A
proposal is what a reviewer opens, claims, scores and approves; changing
its content after it was filed would let the approved text differ from the
text read, and `proposal.created` webhooks and risk scores describe what
was filed. The 409 says what to do instead (wait for the decision, or file
the corrected entry with memory_add, which the reviewer sees beside it).
Context assembly never reads this module: the context stays as it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memoryhub import context, errors
from memoryhub.models import Agent, Proposal, Source
from memoryhub.services.limits import validate_target

PENDING_SHOWN = 20


@dataclass(frozen=True)
class PendingChange:
    proposal: int
    created_at: datetime
    base_version: int
    adds: tuple[str, ...]
    removes: tuple[str, ...]

    def as_dict(self) -> dict[str, object]:
        return {"proposal": self.proposal, "status": "pending", "created_at": self.created_at.isoformat(),
                "base_version": self.base_version, "adds": list(self.adds), "removes": list(self.removes)}


def _entries(content: str) -> list[str]:
    return [entry.strip() for entry in context.split_entries(content) if entry.strip()]


def _changes(proposal: Proposal) -> tuple[tuple[str, ...], tuple[str, ...]]:
    before, after = _entries(proposal.base_content), _entries(proposal.proposed_content)
    old, new = set(before), set(after)
    return tuple(e for e in after if e not in old), tuple(e for e in before if e not in new)


def _own_pending(*, agent: Agent, kind: str, user_ref: str) -> list[Proposal]:
    return list(
        Proposal.objects.pending().for_file(agent, kind, user_ref)
        .filter(author_agent=agent, source=Source.AGENT)
        .only("id", "created_at", "base_version", "base_content", "proposed_content")
        .order_by("-id")[:PENDING_SHOWN]
    )


def own_pending_changes(*, agent: Agent, kind: str, user_ref: str | None = None) -> list[PendingChange]:
    """The calling agent's own pending proposals on one file, oldest first,
    as the entries each adds and removes (re-scanned, as served memory is)."""
    kind, user_ref = validate_target(kind=kind, user_ref=user_ref)
    changes = []
    for proposal in reversed(_own_pending(agent=agent, kind=kind, user_ref=user_ref)):
        adds, removes = _changes(proposal)
        changes.append(PendingChange(
            proposal=proposal.pk, created_at=proposal.created_at, base_version=proposal.base_version,
            adds=tuple(context.serve_untrusted(e).text for e in adds),
            removes=tuple(context.serve_untrusted(e).text for e in removes),
        ))
    return changes


def raise_if_only_pending(*, agent: Agent, kind: str, user_ref: str, needle: str) -> None:
    """PendingReview when `needle` lies in an entry that one of the agent's
    own pending proposals on this file adds (the newest such proposal is
    named); nothing when it does not, so the caller's not_found stands."""
    for proposal in _own_pending(agent=agent, kind=kind, user_ref=user_ref):
        adds, _ = _changes(proposal)
        if any(needle in entry for entry in adds):
            raise errors.PendingReview(
                f"That text is not served yet: it is in your proposal #{proposal.pk}, which waits for review. "
                "Nothing can be changed in it until a person decides; if it is wrong, add the corrected entry "
                "(the reviewer sees both), or change it once it is approved.",
                proposal=proposal.pk, status="pending",
            )
