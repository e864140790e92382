"""The content checks every write to a memory file goes through, once.

A write to a memory file (an agent's write or entry edit, a persona edit,
a reviewer's revision or rebase, a rollback, a consolidation proposal, an
approval putting a proposal into service) runs limits → scanner → the
workspace's personal-data policy: `screen()` runs them in that order and
returns a `Screened` content. `create_proposal` takes only a `Screened`
(no `scanned=` flag to trust), so a new write path cannot store a proposal
whose content skipped the scanner, and no path scans the same content
twice. Agent writes, rollbacks and approvals screen under the file's lock,
after its version check; propose_change screens before taking the lock (the
proposed content does not depend on the file). What follows (the agent's
write policy: a new version or a proposal) is the caller's.

Not yet through here: the agent import (services/portability.py) runs
limits and the scanner on every version but not the personal-data policy,
as before; tools (services/tools.py) are not memory files.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memoryhub.models import Agent
from memoryhub.services.limits import check_limit, check_pii, check_safe


@dataclass(frozen=True)
class Screened:
    """Content that passed the checks for `kind` of `agent`."""

    kind: str
    content: str
    warning: str | None = None  # the compress warning of a soft limit
    pii: list[dict[str, str]] = field(default_factory=list)  # findings the policy keeps (`flag`)


def screen(*, agent: Agent, kind: str, content: str) -> Screened:
    """Limits, then the scanner, then the personal-data policy; raises the
    first refusal (LimitExceeded, UnsafeContent)."""
    warning = check_limit(agent=agent, kind=kind, content=content)
    check_safe(content)
    return Screened(kind=kind, content=content, warning=warning, pii=check_pii(agent=agent, content=content))
