"""The staff REST API, and the isolation matrix across agents, users and roles."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from memoryhub import services
from memoryhub.models import ApiKey, Role, Source
from tests.api_helpers import agent_client, error_code, staff_client
from tests.factories import AgentFactory, staff

pytestmark = pytest.mark.django_db


@pytest.fixture
def second_reviewer(agent):
    return staff(agent.workspace, Role.REVIEWER)


@pytest.fixture
def proposal(agent, admin):
    services.write_memory(agent=agent, kind="SOUL.md", content="v1")
    return services.propose_change(agent=agent, kind="SOUL.md", content="v2", source=Source.ADMIN,
                                   author_user=admin, reason="warmer tone")


def test_it_lists_pending_proposals_oldest_first_with_filters(agent, proposal, reviewer):
    other = services.propose_change(agent=agent, kind="MEMORY.md", user_ref="u1", content="- x",
                                    source=Source.CONSOLIDATION)
    client = staff_client(reviewer)
    body = client.get(f"/api/v1/proposals?status=pending&agent={agent.slug}").json()
    assert body["count"] == 2
    assert [p["id"] for p in body["results"]] == [proposal.pk, other.pk]
    first = body["results"][0]
    assert {"id", "agent", "user", "file", "source", "status", "base_version", "created_at"} <= set(first)
    assert (first["agent"], first["file"], first["source"], first["base_version"]) == (agent.slug, "SOUL.md",
                                                                                         "admin", 1)
    assert client.get("/api/v1/proposals?source=consolidation").json()["count"] == 1
    bad = client.get("/api/v1/proposals?status=maybe")
    assert bad.status_code == 400 and error_code(bad) == "invalid"


def test_it_shows_a_proposal_with_its_diff_and_rationale(proposal, reviewer):
    body = staff_client(reviewer).get(f"/api/v1/proposals/{proposal.pk}").json()
    assert body["proposed_content"] == "v2"
    assert "-v1" in body["diff"] and "+v2" in body["diff"]
    assert body["rationale"][0]["reason"] == "warmer tone"


def test_a_reviewer_approves_and_the_agent_sees_the_new_version(agent, proposal, reviewer):
    response = staff_client(reviewer).post(f"/api/v1/proposals/{proposal.pk}/approve", {"comment": "ok"},
                                           format="json")
    assert response.status_code == 200 and response.json() == {"status": "approved", "version": 2, "stale_siblings": []}
    assert agent_client(agent).get("/api/v1/memory/SOUL.md").json()["content"] == "v2"


def test_approve_without_a_body_works(proposal, reviewer):
    assert staff_client(reviewer).post(f"/api/v1/proposals/{proposal.pk}/approve").status_code == 200


def test_the_author_cannot_approve(proposal, admin):
    response = staff_client(admin).post(f"/api/v1/proposals/{proposal.pk}/approve", {}, format="json")
    assert response.status_code == 403 and error_code(response) == "four_eyes"


def test_a_stale_proposal_answers_409(agent, proposal, reviewer):
    services.write_memory(agent=agent, kind="SOUL.md", content="agent moved on")
    response = staff_client(reviewer).post(f"/api/v1/proposals/{proposal.pk}/approve", {}, format="json")
    assert response.status_code == 409 and error_code(response) == "stale_proposal"


def test_reject_needs_a_comment(proposal, reviewer):
    client = staff_client(reviewer)
    missing = client.post(f"/api/v1/proposals/{proposal.pk}/reject", {}, format="json")
    assert missing.status_code == 400 and error_code(missing) == "invalid"
    done = client.post(f"/api/v1/proposals/{proposal.pk}/reject", {"comment": "Off-brand."}, format="json")
    assert done.status_code == 200 and done.json() == {"status": "rejected"}
    again = client.post(f"/api/v1/proposals/{proposal.pk}/approve", {}, format="json")
    assert again.status_code == 409


def test_an_auditor_reads_but_cannot_decide(agent, proposal):
    client = staff_client(staff(agent.workspace, Role.AUDITOR))
    assert client.get(f"/api/v1/proposals/{proposal.pk}").status_code == 200
    response = client.post(f"/api/v1/proposals/{proposal.pk}/approve", {}, format="json")
    assert response.status_code == 403 and error_code(response) == "permission_denied"


def test_versions_and_rollback(agent, reviewer, second_reviewer):
    for text in ("one", "two"):
        services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content=text, reason=f"r-{text}")
    client = staff_client(reviewer)
    versions = client.get(f"/api/v1/agents/{agent.slug}/files/MEMORY.md/versions?user=u1").json()
    assert [(v["version"], v["content"], v["source"], v["reason"]) for v in versions] == [
        (1, "one", "agent", "r-one"), (2, "two", "agent", "r-two"),
    ]
    assert versions[0]["author"] == f"agent:{agent.slug}" and versions[0]["created_at"]
    no_reason = client.post(f"/api/v1/agents/{agent.slug}/files/MEMORY.md/rollback?user=u1", {"version": 1},
                            format="json")
    assert no_reason.status_code == 400
    done = client.post(f"/api/v1/agents/{agent.slug}/files/MEMORY.md/rollback?user=u1",
                       {"version": 1, "reason": "two was wrong"}, format="json")
    assert done.status_code == 202 and done.json()["status"] == "pending"
    assert agent_client(agent).get("/api/v1/memory/MEMORY.md?user=u1").json()["content"] == "two"
    rollback = done.json()["proposal"]
    own = client.post(f"/api/v1/proposals/{rollback}/approve", {}, format="json")
    assert own.status_code == 403 and error_code(own) == "four_eyes"
    approved = staff_client(second_reviewer).post(f"/api/v1/proposals/{rollback}/approve", {}, format="json")
    assert approved.status_code == 200 and approved.json() == {"status": "approved", "version": 3, "stale_siblings": []}
    assert agent_client(agent).get("/api/v1/memory/MEMORY.md?user=u1").json()["content"] == "one"


# --- isolation ----------------------------------------------------------------------------------------

STAFF_ROUTES = [
    ("get", "/api/v1/proposals"),
    ("get", "/api/v1/proposals/{proposal}"),
    ("post", "/api/v1/proposals/{proposal}/approve"),
    ("post", "/api/v1/proposals/{proposal}/reject"),
    ("get", "/api/v1/agents/{slug}/files/SOUL.md/versions"),
    ("post", "/api/v1/agents/{slug}/files/SOUL.md/rollback"),
]
AGENT_ROUTES = [
    ("get", "/api/v1/context?user=u1"),
    ("get", "/api/v1/memory/SOUL.md"),
    ("put", "/api/v1/memory/SOUL.md"),
    ("get", "/api/v1/memory/search?q=x"),
    ("get", "/api/v1/tools"),
    ("put", "/api/v1/tools"),
    ("post", "/api/v1/sessions"),
]


@pytest.mark.parametrize(("method", "path"), STAFF_ROUTES)
def test_an_agent_key_is_refused_on_every_staff_route(agent, proposal, method, path):
    url = path.format(proposal=proposal.pk, slug=agent.slug)
    response = getattr(agent_client(agent), method)(url, {"version": 1, "reason": "x", "comment": "x"}, format="json")
    assert response.status_code == 403 and error_code(response) == "permission_denied"
    assert "v1" not in response.content.decode()


@pytest.mark.parametrize(("method", "path"), STAFF_ROUTES + AGENT_ROUTES)
def test_a_revoked_key_is_refused_everywhere(agent, proposal, method, path):
    client = agent_client(agent)
    for key in ApiKey.objects.filter(agent=agent):
        services.revoke_agent_key(key=key, actor=services.SYSTEM)
    url = path.format(proposal=proposal.pk, slug=agent.slug)
    response = getattr(client, method)(url, {"content": "x"}, format="json")
    assert response.status_code == 401 and error_code(response) == "not_authenticated"


@pytest.mark.parametrize(("method", "path"), AGENT_ROUTES)
def test_a_staff_token_is_refused_on_agent_routes(reviewer, method, path):
    response = getattr(staff_client(reviewer), method)(path, {"content": "x"}, format="json")
    assert response.status_code == 403 and error_code(response) == "permission_denied"


@pytest.mark.parametrize(("method", "path"), STAFF_ROUTES)
def test_staff_routes_need_authentication(agent, proposal, method, path):
    response = getattr(APIClient(), method)(path.format(proposal=proposal.pk, slug=agent.slug))
    assert response.status_code == 401 and error_code(response) == "not_authenticated"


def test_staff_of_another_workspace_get_404_for_this_workspaces_objects(agent, proposal):
    outsider = staff_client(staff(AgentFactory().workspace, Role.ADMIN))
    for method, path in STAFF_ROUTES[1:]:
        url = path.format(proposal=proposal.pk, slug=agent.slug)
        response = getattr(outsider, method)(url, {"version": 1, "reason": "x", "comment": "x"}, format="json")
        assert response.status_code == 404 and error_code(response) == "not_found", url
    assert outsider.get("/api/v1/proposals").json()["count"] == 0


def test_agent_a_cannot_reach_agent_b_or_user_x_user_y(agent):
    other = AgentFactory(workspace=agent.workspace)
    services.write_memory(agent=other, kind="SOUL.md", content="I am B.")
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="x", content="- X's secret plan: bake")
    services.write_memory(agent=other, kind="MEMORY.md", user_ref="x", content="- B knows about bake too")
    a = agent_client(agent)
    assert a.get("/api/v1/memory/SOUL.md").json()["exists"] is False
    assert a.get("/api/v1/memory/MEMORY.md?user=y").json()["exists"] is False
    assert "B knows" not in a.get("/api/v1/memory/MEMORY.md?user=x").json()["content"]
    assert a.get("/api/v1/memory/search?q=bake&user=y").json()["results"] == []
    hits = a.get("/api/v1/memory/search?q=bake&user=x").json()["results"]
    assert len(hits) == 1 and "B knows" not in hits[0]["snippet"]
    assert "bake" not in a.get("/api/v1/context?user=y").json()["system_prompt"]
    b_session = services.start_session(agent=other, user_ref="x")
    assert a.post(f"/api/v1/sessions/{b_session.pk}/log", {"entries": [{"role": "user", "content": "hi"}]},
                  format="json").status_code == 404
    assert a.get(f"/api/v1/context?user=x&session={b_session.pk}").status_code == 404
