"""memoryhub-client against a live server, the rest of the agent routes
(conditional context, a search hit's entry, tools) and the staff client a
compliance team scripts (memoryhub_client.staff), sync and async."""

from __future__ import annotations

from typing import Any

import pytest
from memoryhub_client import AsyncMemoryHub, FourEyes, MemoryHub, NotFound, PermissionDenied, Tool, Unchanged
from memoryhub_client.staff import AsyncMemoryHubStaff, MemoryHubStaff

from memoryhub import services
from memoryhub.models import Change, ChangeStatus, Proposal, ProposalStatus, Role, Source
from tests.factories import staff
from tests.live import run_async

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def hub(live_server: Any, agent) -> Any:
    key = services.issue_agent_key(agent=agent, actor=services.SYSTEM)[1]
    with MemoryHub(live_server.url, key) as client:
        yield client


def token(user: Any) -> str:
    return services.issue_staff_token(user=user)[1]


def test_the_context_comes_again_only_when_it_changed(agent, hub):
    first = hub.context("u1")
    assert hub.context_if_changed("u1", first.etag) == Unchanged(etag=first.etag)
    services.write_memory(agent=agent, kind="SOUL.md", content="I am Penny.")
    changed = hub.context_if_changed("u1", first.etag)
    assert not isinstance(changed, Unchanged) and "I am Penny." in changed.system_prompt
    assert changed.etag != first.etag


def test_it_lists_the_history_of_its_own_files_without_their_text(agent, hub):
    hub.add_entry("MEMORY.md", "Prefers email.", user="u1", reason="said so")
    hub.replace_entry("MEMORY.md", "email", "Prefers phone calls.", user="u1")
    versions = hub.versions("MEMORY.md", user="u1")
    assert [(v.version, v.source, v.current) for v in versions] == [(1, "agent", False), (2, "agent", True)]
    assert versions[0].reason == "said so" and versions[1].chars == len("Prefers phone calls.\n")
    assert hub.versions("SOUL.md") == []


def test_it_reads_a_search_hit_entry_and_the_agents_tools(agent, hub):
    session = hub.start_session("u1")
    hub.log(session.id, [{"role": "user", "content": "My bike bell is missing from order 1042."}])
    [hit] = [h for h in hub.search("bell", user="u1") if h.source == "log"]
    entry = hub.search_entry(hit.raw["entry"], user="u1")
    assert (entry.session, entry.role, entry.content) == (session.id, "user",
                                                          "My bike bell is missing from order 1042.")
    with pytest.raises(NotFound):
        hub.search_entry(hit.raw["entry"], user="someone-else")
    tools = hub.replace_tools([Tool("lookup_order", "Finds an order.", {"type": "object"}),
                               {"name": "refund", "description": "Refunds an order."}])
    assert [t.name for t in tools] == ["lookup_order", "refund"] and hub.tools() == tools


def test_the_async_client_has_the_same_calls(live_server, agent):
    key = services.issue_agent_key(agent=agent, actor=services.SYSTEM)[1]

    async def scenario() -> tuple[Any, list[Tool]]:
        async with AsyncMemoryHub(live_server.url, key) as client:
            context = await client.context("u1")
            await client.replace_tools([Tool("lookup_order", "Finds an order.")])
            return await client.context_if_changed("u1", context.etag), await client.tools()

    unchanged, tools = run_async(scenario)
    # Registering a tool changes the tool section, so the context changed.
    assert not isinstance(unchanged, Unchanged) and "lookup_order" in unchanged.system_prompt
    assert [t.name for t in tools] == ["lookup_order"]


def proposals_of(agent, admin, n: int, first: int = 0) -> list[int]:
    return [services.propose_change(agent=agent, kind="MEMORY.md", user_ref=f"u{i}", content=f"- fact {i}",
                                    source=Source.ADMIN, author_user=admin, reason="seeded").pk
            for i in range(first, first + n)]


def test_a_reviewer_lists_approves_and_rejects_with_reason_codes(live_server, agent):
    admin, reviewer = staff(agent.workspace, Role.ADMIN), staff(agent.workspace, Role.REVIEWER)
    first, second, third, fourth = proposals_of(agent, admin, 4)
    with MemoryHubStaff(live_server.url, token(reviewer)) as team:
        page = team.proposals(agent=agent.slug)
        assert page.count == 4 and [p.id for p in page.results] == [first, second, third, fourth]
        detail = team.proposal(first)
        assert detail.proposed_content == "- fact 0" and "+- fact 0" in detail.diff
        approved = team.approve(first, comment="checked", reason_code="accurate")
        assert (approved.status, approved.version) == ("approved", 1)
        assert team.reject(second, reason_code="outdated").status == "rejected"
        bulk = team.decide_in_bulk([third, fourth], action="reject", reason_code="duplicate")
        assert [(item.id, item.status) for item in bulk.results] == [(third, "rejected"), (fourth, "rejected")]
        assert [v.version for v in team.versions(agent.slug, "MEMORY.md", user="u0")] == [1]
    assert Proposal.objects.get(pk=second).reason_code == "outdated"
    with MemoryHubStaff(live_server.url, token(admin)) as author, pytest.raises(FourEyes) as refused:
        author.approve(proposals_of(agent, admin, 1, first=9)[0])
    assert isinstance(refused.value, PermissionDenied) and refused.value.status == 403


def test_an_admin_requests_an_erasure_another_approves_it_and_the_export_is_empty(live_server, agent):
    services.write_memory(agent=agent, kind="USER.md", user_ref="cust-9", content="- Name: Ada\n")
    admin, admin2 = staff(agent.workspace, Role.ADMIN), staff(agent.workspace, Role.ADMIN)
    with MemoryHubStaff(live_server.url, token(admin)) as first:
        export = first.export_subject("cust-9", workspace=agent.workspace.slug)
        assert "- Name: Ada" in str(export)
        pending = first.request_erasure("cust-9", reason="Subject request 12", workspace=agent.workspace.slug)
        assert pending.status == "pending"

    async def approve() -> Any:
        async with AsyncMemoryHubStaff(live_server.url, token(admin2)) as second:
            [change] = [c for c in await second.changes() if c.id == pending.change]
            assert change.kind == "erasure"
            return await second.approve_change(change.id, comment="verified")

    decided = run_async(approve)
    assert decided.status == ChangeStatus.APPROVED == Change.objects.get(pk=pending.change).status
    assert not services.read_memory(agent=agent, kind="USER.md", user_ref="cust-9").exists
    assert not Proposal.objects.filter(user_ref="cust-9", status=ProposalStatus.PENDING).exists()
