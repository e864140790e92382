"""The subject lookup every subject operation shares (export now, erasure
later): every row that holds one end user's data in one workspace, and
nothing of another user or another workspace."""

from __future__ import annotations

import json
import unicodedata

import pytest

from consolidation import services as consolidation
from memoryhub import errors, services
from memoryhub.models import AuditEvent, Role, Source
from tests.factories import AgentFactory, WorkspaceFactory, staff

pytestmark = pytest.mark.django_db


def _traces(agent, user_ref, marker, *, reviewer=None):
    """Every kind of row a user leaves: two versions of USER.md, MEMORY.md,
    a proposal, a session with log entries, a withheld file's release
    request and a consolidation run."""
    services.write_memory(agent=agent, kind="USER.md", user_ref=user_ref, content=f"- {marker} v1")
    services.write_memory(agent=agent, kind="USER.md", user_ref=user_ref, content=f"- {marker} v2")
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref=user_ref, content=f"- {marker} memory")
    services.propose_change(agent=agent, kind="MEMORY.md", user_ref=user_ref, content=f"- {marker} proposed",
                            source=Source.CONSOLIDATION)
    session = services.start_session(agent=agent, user_ref=user_ref)
    services.append_log(session=session, entries=[{"role": "user", "content": f"{marker} said hello"},
                                                  {"role": "assistant", "content": "hi"}])
    if reviewer is not None:
        services.withhold_file(agent=agent, kind="USER.md", user_ref=user_ref, actor=reviewer, reason="check")
        services.request_release(agent=agent, kind="USER.md", user_ref=user_ref, actor=reviewer, reason="fine")
    consolidation.trigger_run(agent=agent, user_ref=user_ref)
    return session


def test_it_finds_every_row_of_the_subject_and_nothing_else():
    agent = AgentFactory()
    second = AgentFactory(workspace=agent.workspace)
    reviewer = staff(agent.workspace, Role.REVIEWER)
    _traces(agent, "alice", "ALICE-1", reviewer=reviewer)
    _traces(second, "alice", "ALICE-2")
    _traces(agent, "bob", "BOB")
    _traces(AgentFactory(), "alice", "ELSEWHERE")

    subject = services.subject_in(workspace=agent.workspace, user_ref="alice")

    counts = subject.counts()
    # memory.write ×6, proposal.create ×2, file.withhold, change.request at least.
    assert counts.pop("events") >= 10
    assert counts == {"files": 4, "versions": 6, "proposals": 2, "sessions": 2, "log_entries": 4, "changes": 1,
                      "runs": 2}
    everything = json.dumps([
        list(subject.files().values_list("content", flat=True)),
        list(subject.versions().values_list("content", flat=True)),
        list(subject.proposals().values_list("proposed_content", flat=True)),
        list(subject.log_entries().values_list("content", flat=True)),
    ])
    assert "ALICE-1" in everything and "ALICE-2" in everything
    assert "BOB" not in everything and "ELSEWHERE" not in everything
    assert set(subject.events().values_list("user_ref", flat=True)) == {"alice"}


def test_it_treats_composed_and_decomposed_references_as_one_subject():
    agent = AgentFactory()
    composed = unicodedata.normalize("NFC", "José")
    services.write_memory(agent=agent, kind="USER.md", user_ref=composed, content="- likes tea")
    subject = services.subject_in(workspace=agent.workspace, user_ref=unicodedata.normalize("NFD", "José"))
    assert subject.user_ref == composed and subject.files().count() == 1
    assert services.subject_in(workspace=agent.workspace, user_ref="jose").files().count() == 0


@pytest.mark.parametrize("bad", ["", "x" * 256, "tab\there", "nul\x00", 42])
def test_it_refuses_a_malformed_reference(bad):
    with pytest.raises(errors.Invalid):
        services.subject_in(workspace=WorkspaceFactory(), user_ref=bad)


def test_find_subject_checks_the_role_in_the_workspace_and_records_a_refusal():
    agent = AgentFactory()
    reviewer = staff(agent.workspace, Role.REVIEWER)
    with pytest.raises(errors.PermissionDenied):
        services.find_subject(actor=reviewer, user_ref="alice")
    refusal = AuditEvent.objects.get(action="subject.refused")
    assert refusal.workspace == agent.workspace and refusal.actor_user == reviewer

    admin = staff(agent.workspace, Role.ADMIN)
    assert services.find_subject(actor=admin, user_ref="alice").workspace == agent.workspace
    # Erasure will ask for admins only: an auditor may export, not erase.
    auditor = staff(agent.workspace, Role.AUDITOR)
    assert services.find_subject(actor=auditor, user_ref="alice").workspace == agent.workspace
    with pytest.raises(errors.PermissionDenied):
        services.find_subject(actor=auditor, user_ref="alice", roles=services.ADMIN_ROLES, action="erase subjects")


def test_find_subject_hides_workspaces_the_actor_has_no_role_in():
    admin = staff(AgentFactory().workspace, Role.ADMIN)
    other = WorkspaceFactory()
    with pytest.raises(errors.NotFound):
        services.find_subject(actor=admin, user_ref="alice", workspace=other.slug)
    with pytest.raises(errors.NotFound):
        services.find_subject(actor=admin, user_ref="alice", workspace="no-such-workspace")
    assert not AuditEvent.objects.filter(workspace=other).exists()


def test_find_subject_asks_for_the_workspace_when_the_actor_has_several():
    first, second = WorkspaceFactory(), WorkspaceFactory()
    admin = staff(first, Role.ADMIN)
    staff_second = staff(second, Role.AUDITOR, username=admin.username)
    assert staff_second == admin
    with pytest.raises(errors.Invalid) as raised:
        services.find_subject(actor=admin, user_ref="alice")
    assert raised.value.extra["field"] == "workspace"
    assert services.find_subject(actor=admin, user_ref="alice", workspace=second.slug).workspace == second


def test_the_shell_names_the_workspace():
    workspace = WorkspaceFactory()
    assert services.find_subject(actor=services.SYSTEM, user_ref="a", workspace=workspace.slug).workspace == workspace
    with pytest.raises(errors.Invalid):
        services.find_subject(actor=services.SYSTEM, user_ref="a")
