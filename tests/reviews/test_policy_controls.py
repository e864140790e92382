"""A control on the proposal page never promises what the service refuses.

For every role × proposal state × control: the page is rendered for that
person; then, on a fresh world, the control's POST is sent. A control that
is shown must succeed and one that is refused must be hidden, because the
page and the service ask the same function (memoryhub/policy.py).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.test import Client

from memoryhub import services
from memoryhub.models import AuditEvent, Proposal, Workspace
from tests.test_parity import (
    BASE,
    World,
    claimed,
    conflicted_proposal,
    console,
    make_world,
    pending_proposal,
    stale_proposal,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_passwords")]


def high_risk_admin_only(world: World) -> Proposal:
    """A high-risk persona edit in a workspace where only an admin approves those."""
    Workspace.objects.filter(pk=world.agent.workspace_id).update(high_risk_approval="admin")
    return services.propose_persona_edit(agent=world.agent, kind="SOUL.md", content="I am Penny.", reason="r",
                                         actor_user=world.users["admin"])


def first_approved(world: World) -> Proposal:
    """A high-risk proposal under two approvals, approved once by `reviewer`."""
    Workspace.objects.filter(pk=world.agent.workspace_id).update(high_risk_approval="two_approvals")
    proposal = services.propose_persona_edit(agent=world.agent, kind="SOUL.md", content="I am Penny.", reason="r",
                                             actor_user=world.users["admin"])
    services.approve_proposal(proposal_id=proposal.pk, reviewer=world.users["reviewer"])
    return proposal


def rejected(world: World) -> Proposal:
    proposal = pending_proposal(world)
    services.reject_proposal(proposal_id=proposal.pk, reviewer=world.users["reviewer2"], comment="no")
    return proposal


STATES: dict[str, Callable[[World], Proposal]] = {
    "pending": pending_proposal,
    "stale": stale_proposal,
    "conflicted": conflicted_proposal,
    "claimed_by_reviewer2": claimed,
    "high_risk_admin_only": high_risk_admin_only,
    "first_approved_by_reviewer": first_approved,
    "rejected": rejected,
}
# admin wrote every proposal; reviewer2 rebased the conflicted one and holds the claim.
ROLES = ["reviewer", "reviewer2", "admin", "admin2", "auditor"]
CONTROLS = {
    "approve": {},
    "reject": {"comment": "not needed"},
    "withdraw": {},
    "claim": {},
    "unclaim": {},
}


def shown(html: str, action: str) -> bool:
    return f'name="action" value="{action}"' in html


@pytest.mark.parametrize("state", list(STATES))
@pytest.mark.parametrize("role", ROLES)
def test_a_shown_control_succeeds_and_a_refused_one_is_hidden(state: str, role: str) -> None:
    world = make_world()
    proposal = STATES[state](world)
    client = Client()
    client.force_login(world.users[role])
    page = client.get(f"/proposals/{proposal.pk}/")
    assert page.status_code == 200
    html = page.content.decode()
    visible = {action for action in CONTROLS if shown(html, action)}

    outcomes = {}
    for action, data in CONTROLS.items():
        fresh = make_world()
        target = STATES[state](fresh)
        events = AuditEvent.objects.count()
        answer = console(fresh.users[role], f"/proposals/{target.pk}/", {"action": action, **data})
        # Done means something happened: claiming one's own claim again is
        # answered with success and changes nothing, so it offers no button.
        outcomes[action] = answer.ok and AuditEvent.objects.count() > events

    allowed = {action for action, ok in outcomes.items() if ok}
    assert visible == allowed, f"{role} on a {state} proposal: shown {sorted(visible)}, allowed {sorted(allowed)}"


def test_the_table_has_both_answers() -> None:
    # The cases above would pass vacuously if no control were ever shown.
    world = make_world()
    proposal = pending_proposal(world, content=BASE + "- x\n")
    client = Client()
    client.force_login(world.users["reviewer"])
    html = client.get(f"/proposals/{proposal.pk}/").content.decode()
    assert shown(html, "approve") and shown(html, "reject") and shown(html, "claim")
    assert not shown(html, "withdraw") and not shown(html, "unclaim")
