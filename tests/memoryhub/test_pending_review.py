"""Read your own writes under `review` (memoryhub.services.pending): the
memory read shows the calling agent's own pending proposals apart from the
served content, an entry operation on text only such a proposal holds is a
409 `pending_review` naming it, and nothing served or injected changes."""

from __future__ import annotations

import pytest

from memoryhub import context, services
from memoryhub.models import Proposal, ProposalStatus, WritePolicy
from tests.api_helpers import agent_client, error_code
from tests.factories import AgentFactory, staff

pytestmark = pytest.mark.django_db

URL = "/api/v1/memory/MEMORY.md"
ENTRIES = URL + "/entries"


@pytest.fixture
def served():
    """An agent under `review` whose MEMORY.md for u1 serves one entry."""
    agent = AgentFactory(write_policy=WritePolicy.DIRECT)
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content="- Likes tea.\n")
    agent.write_policy = WritePolicy.REVIEW
    agent.save(update_fields=["write_policy"])
    return agent


@pytest.fixture
def client(served):
    return agent_client(served)


def test_the_read_shows_the_agents_own_pending_write_apart_from_the_served_content(client, served):
    added = client.post(ENTRIES + "?user=u1", {"text": "Prefers email."}, format="json")
    assert added.status_code == 202
    body = client.get(URL, {"user": "u1"}).json()
    assert body["content"] == "- Likes tea.\n" and "email" not in body["as_data"]
    (pending,) = body["pending_review"]
    assert pending["proposal"] == added.json()["proposal"] and pending["status"] == "pending"
    assert pending["adds"] == ["- Prefers email."] and pending["removes"] == []
    assert pending["created_at"] and pending["base_version"] == 1


def test_a_pending_replace_shows_what_it_adds_and_removes(client):
    client.patch(ENTRIES + "?user=u1", {"old_text": "tea", "new_text": "Likes green tea."}, format="json")
    (pending,) = client.get(URL, {"user": "u1"}).json()["pending_review"]
    assert pending["adds"] == ["- Likes green tea."] and pending["removes"] == ["- Likes tea."]


def test_another_agents_or_users_pending_writes_are_not_shown(client, served):
    other = AgentFactory(write_policy=WritePolicy.REVIEW)
    services.add_entry(agent=other, kind="MEMORY.md", user_ref="u1", text="Other agent's fact.")
    services.add_entry(agent=served, kind="MEMORY.md", user_ref="u2", text="Another user's fact.")
    assert client.get(URL, {"user": "u1"}).json()["pending_review"] == []


def test_a_decided_proposal_leaves_the_pending_part(client, served):
    proposal_id = client.post(ENTRIES + "?user=u1", {"text": "Prefers email."}, format="json").json()["proposal"]
    reviewer = staff(served.workspace)
    services.reject_proposal(proposal_id=proposal_id, reviewer=reviewer, comment="Not said by the user.")
    assert client.get(URL, {"user": "u1"}).json()["pending_review"] == []


@pytest.mark.parametrize("method", ["patch", "delete"])
def test_an_entry_operation_on_text_only_a_pending_proposal_holds_is_409_naming_it(client, method):
    proposal_id = client.post(ENTRIES + "?user=u1", {"text": "Prefers email."}, format="json").json()["proposal"]
    body = {"old_text": "email", **({"new_text": "Prefers post."} if method == "patch" else {})}
    response = getattr(client, method)(ENTRIES + "?user=u1", body, format="json")
    assert response.status_code == 409 and error_code(response) == "pending_review"
    assert response.json()["error"]["proposal"] == proposal_id
    assert f"#{proposal_id}" in response.json()["error"]["detail"]
    # Decision (services.pending): the proposal is not amended, and no second one is filed.
    assert Proposal.objects.get(pk=proposal_id).proposed_content == "- Likes tea.\n- Prefers email.\n"
    assert Proposal.objects.filter(status=ProposalStatus.PENDING).count() == 1


def test_text_in_no_entry_and_no_pending_proposal_is_still_not_found(client):
    client.post(ENTRIES + "?user=u1", {"text": "Prefers email."}, format="json")
    response = client.patch(ENTRIES + "?user=u1", {"old_text": "coffee", "new_text": "x"}, format="json")
    assert response.status_code == 404 and error_code(response) == "not_found"


def test_served_text_still_answers_as_before_while_a_proposal_waits(client):
    client.post(ENTRIES + "?user=u1", {"text": "Prefers email."}, format="json")
    response = client.patch(ENTRIES + "?user=u1", {"old_text": "tea", "new_text": "Likes coffee."}, format="json")
    assert response.status_code == 202


def test_the_context_and_a_sessions_snapshot_stay_exactly_as_before(served):
    before = context.build_context(agent=served, user_ref="u1")
    services.add_entry(agent=served, kind="MEMORY.md", user_ref="u1", text="Prefers email.")
    services.add_entry(agent=served, kind="USER.md", user_ref="u1", text="Lives in Porto.")
    services.add_entry(agent=served, kind="TOOLS.md", text="Use the refunds tool.")
    after = context.build_context(agent=served, user_ref="u1")
    assert after["system_prompt"] == before["system_prompt"] and after["etag"] == before["etag"]
    assert "email" not in after["system_prompt"] and "Porto" not in after["system_prompt"]
    assert "refunds" not in after["system_prompt"]


def test_the_agent_files_show_pending_writes_too(served):
    services.add_entry(agent=served, kind="TOOLS.md", text="Use the refunds tool for disputes.")
    (pending,) = services.own_pending_changes(agent=served, kind="TOOLS.md")
    assert pending.adds == ("Use the refunds tool for disputes.",) and pending.base_version == 0
