from __future__ import annotations

from io import StringIO

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from memoryhub import demo, demo_history, errors, services
from memoryhub.models import (
    Agent,
    AgentSession,
    ApiKey,
    AuditEvent,
    Change,
    FileKind,
    LogEntry,
    Membership,
    MemoryFile,
    Proposal,
    ProposalStatus,
    Role,
    Source,
    StaffToken,
    Workspace,
)
from tests.factories import AgentFactory, UserFactory, WorkspaceFactory, staff

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_passwords")]


User = get_user_model()


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def row_counts() -> dict[str, int]:
    # Every memoryhub model, the history model included, plus users.
    counts = {model.__name__: model.objects.count() for model in apps.get_app_config("memoryhub").get_models()}
    counts["User"] = User.objects.count()
    return counts


# --- create_agent ---------------------------------------------------------------------


def test_it_creates_the_workspace_and_the_agent_with_the_chosen_options():
    out, _ = run(
        "create_agent", "claims-bot", "--workspace", "insurance", "--name", "Claims bot",
        "--strategy", "full", "--write-policy", "review", "--backend", "llm",
    )  # fmt: skip

    agent = Agent.objects.select_related("workspace").get(slug="claims-bot")
    assert agent.workspace.slug == "insurance"
    assert (agent.name, agent.strategy, agent.write_policy, agent.consolidation_backend) == (
        "Claims bot", "full", "review", "llm",
    )  # fmt: skip
    assert "Created workspace insurance" in out
    assert AuditEvent.objects.filter(action="agent.create", agent=agent).exists()


def test_it_uses_the_default_workspace_and_settings():
    run("create_agent", "helper")

    agent = Agent.objects.get(slug="helper")
    assert agent.workspace.slug == "default"
    assert (agent.strategy, agent.write_policy, agent.consolidation_backend) == ("hybrid_v2", "review", "heuristic")


def test_it_may_create_a_direct_agent_at_the_shell_and_records_that_it_did():
    run("create_agent", "helper", "--write-policy", "direct")

    agent = Agent.objects.get(slug="helper")
    assert agent.write_policy == "direct"
    event = AuditEvent.objects.get(action="agent.create", agent=agent)
    assert event.details["weaker_than_default"] is True and "at the shell" in event.summary


def test_it_refuses_an_unknown_strategy():
    with pytest.raises(CommandError, match="invalid choice"):
        run("create_agent", "helper", "--strategy", "everything")
    assert not Agent.objects.exists()
    assert not Workspace.objects.exists()


def test_it_refuses_a_slug_that_is_not_a_slug():
    with pytest.raises(CommandError, match="not a valid agent slug"):
        run("create_agent", "my bot!")
    assert not Agent.objects.exists()


def test_it_refuses_an_existing_slug_unless_told_to_update():
    AgentFactory(slug="helper", strategy="hybrid_v2")

    with pytest.raises(CommandError, match="already exists.*--update"):
        run("create_agent", "helper", "--strategy", "full")

    out, _ = run("create_agent", "helper", "--update", "--strategy", "full")
    agent = Agent.objects.get(slug="helper")
    assert agent.strategy == "full"
    assert agent.write_policy == "direct"  # options not given stay as they were
    assert "strategy" in out
    assert AuditEvent.objects.filter(action="agent.settings", agent=agent).count() == 1


def test_the_shell_cannot_loosen_an_agents_policy_alone():
    agent = AgentFactory(slug="helper", write_policy="review")

    with pytest.raises(CommandError, match="takes two admins.*--as USERNAME") as refused:
        run("create_agent", "helper", "--update", "--write-policy", "direct")

    assert isinstance(refused.value.__cause__, services.NeedsRequester)
    agent.refresh_from_db()
    assert agent.write_policy == "review"
    assert not Change.objects.exists()
    assert not AuditEvent.objects.filter(action__in=["agent.settings", "change.request"]).exists()


def test_the_shell_tightens_at_once_and_says_so():
    agent = AgentFactory(slug="helper", write_policy="direct")

    out, _ = run("create_agent", "helper", "--update", "--write-policy", "review")

    agent.refresh_from_db()
    assert agent.write_policy == "review" and "write_policy" in out
    event = AuditEvent.objects.get(action="agent.settings", agent=agent)
    assert event.actor_user is None and "at the shell" in event.summary


def test_a_loosening_as_a_named_admin_waits_for_another_admin():
    agent = AgentFactory(slug="helper", write_policy="review")
    admin, second = staff(agent.workspace, Role.ADMIN), staff(agent.workspace, Role.ADMIN)

    out, _ = run("create_agent", "helper", "--update", "--write-policy", "direct", "--as", admin.username,
                 "--reason", "pilot week")

    change = Change.objects.get()
    assert (change.status, change.requested_by, change.reason) == ("pending", admin, "pilot week")
    assert f"change #{change.pk}" in out and "nothing applied yet" in out
    agent.refresh_from_db()
    assert agent.write_policy == "review"
    with pytest.raises(errors.FourEyes):
        services.approve_change(change_id=change.pk, actor=admin)
    services.approve_change(change_id=change.pk, actor=second)
    agent.refresh_from_db()
    assert agent.write_policy == "direct"


@pytest.mark.parametrize("role, refused", [(Role.REVIEWER, "does not allow you to change agent settings"),
                                           (None, "no agent 'helper' in your workspaces")])
def test_as_a_user_the_command_has_that_users_rights_only(role, refused):
    agent = AgentFactory(slug="helper", write_policy="review")
    user = staff(agent.workspace if role else WorkspaceFactory(), role or Role.ADMIN)

    with pytest.raises(CommandError, match=refused):
        run("create_agent", "helper", "--update", "--strategy", "full", "--as", user.username)

    agent.refresh_from_db()
    assert agent.strategy != "full"


def test_as_needs_an_existing_active_user():
    AgentFactory(slug="helper")
    with pytest.raises(CommandError, match="no user named 'nobody'"):
        run("create_agent", "helper", "--update", "--strategy", "full", "--as", "nobody")
    inactive = UserFactory(is_active=False)
    with pytest.raises(CommandError, match="inactive"):
        run("create_agent", "helper", "--update", "--strategy", "full", "--as", inactive.username)


def test_an_admin_creating_at_the_shell_gets_the_consoles_rules():
    workspace = WorkspaceFactory(slug="one")
    admin = staff(workspace, Role.ADMIN)

    with pytest.raises(CommandError, match="request `direct` as a change"):
        run("create_agent", "helper", "--workspace", "one", "--write-policy", "direct", "--as", admin.username)
    with pytest.raises(CommandError, match="only the operator"):
        run("create_agent", "helper", "--workspace", "elsewhere", "--as", admin.username)
    assert not Agent.objects.exists() and not Workspace.objects.filter(slug="elsewhere").exists()

    run("create_agent", "helper", "--workspace", "one", "--as", admin.username)
    event = AuditEvent.objects.get(action="agent.create")
    assert event.actor_user == admin and Agent.objects.get().write_policy == "review"


def test_it_does_not_move_an_agent_to_another_workspace():
    AgentFactory(slug="helper", workspace=WorkspaceFactory(slug="one"))

    with pytest.raises(CommandError, match="cannot be moved"):
        run("create_agent", "helper", "--update", "--workspace", "two")


# --- issue_agent_key ------------------------------------------------------------------


def test_it_prints_an_agent_key_that_resolves_and_stores_only_its_hash():
    agent = AgentFactory(slug="helper")

    out, err = run("issue_agent_key", "helper", "--name", "prod")

    raw = out.strip()
    assert out == raw + "\n"  # alone on stdout, so a script can capture it
    resolved = services.agent_for_key(raw)
    assert resolved is not None and resolved[0] == agent
    key = ApiKey.objects.get()
    assert key.name == "prod"
    assert key.key_hash == services.hash_secret(raw)
    assert raw not in {key.prefix, key.key_hash, key.name}
    assert raw not in err


def test_it_refuses_a_key_for_an_unknown_agent():
    with pytest.raises(CommandError, match="no agent"):
        run("issue_agent_key", "ghost")
    assert not ApiKey.objects.exists()


# --- create_staff ---------------------------------------------------------------------


def test_it_creates_a_staff_user_with_a_role_in_a_new_workspace():
    run("create_staff", "alice", "--workspace", "bank", "--role", "reviewer", "--password", "long-enough-pass-1")

    user = User.objects.get(username="alice")
    assert user.check_password("long-enough-pass-1")
    membership = Membership.objects.get(user=user)
    assert (membership.workspace.slug, membership.role) == ("bank", Role.REVIEWER)
    assert AuditEvent.objects.filter(action="staff.role").count() == 1


def test_it_replaces_the_role_when_run_again():
    run("create_staff", "alice", "--workspace", "bank", "--role", "reviewer")
    out, _ = run("create_staff", "alice", "--workspace", "bank", "--role", "auditor")

    assert list(Membership.objects.values_list("role", flat=True)) == [Role.AUDITOR]
    assert "was reviewer" in AuditEvent.objects.filter(action="staff.role").first().summary
    assert "auditor" in out


def test_it_gives_a_new_user_without_a_password_an_unusable_one():
    out, _ = run("create_staff", "bob", "--workspace", "bank", "--role", "auditor")

    assert not User.objects.get(username="bob").has_usable_password()
    assert "unusable password" in out


def test_it_lets_admins_into_the_django_admin():
    run("create_staff", "carol", "--workspace", "bank", "--role", "admin")

    assert User.objects.get(username="carol").is_staff


def test_it_refuses_a_weak_password():
    with pytest.raises(CommandError, match="too short"):
        run("create_staff", "dave", "--workspace", "bank", "--role", "reviewer", "--password", "abc")
    assert not User.objects.filter(username="dave").exists()
    assert not Workspace.objects.exists()


# --- issue_token ------------------------------------------------------------------------


def test_it_prints_a_personal_token_that_resolves():
    user = UserFactory(username="alice")

    out, _ = run("issue_token", "alice")

    raw = out.strip()
    resolved = services.user_for_token(raw)
    assert resolved is not None and resolved[0] == user
    assert StaffToken.objects.get().key_hash == services.hash_secret(raw)


def test_it_refuses_a_token_for_an_unknown_or_inactive_user():
    UserFactory(username="gone", is_active=False)

    with pytest.raises(CommandError, match="no user"):
        run("issue_token", "nobody")
    with pytest.raises(CommandError, match="inactive"):
        run("issue_token", "gone")
    assert not StaffToken.objects.exists()


# --- seed_demo ----------------------------------------------------------------------------


def test_it_seeds_the_demo_workspace():
    out, _ = run("seed_demo")

    workspace = Workspace.objects.get(slug="demo")
    assert workspace.name == "Demo Bank"
    roles = dict(Membership.objects.filter(workspace=workspace).values_list("user__username", "role"))
    assert roles == {"admin": "admin", "admin2": "admin", "reviewer": "reviewer", "reviewer2": "reviewer",
                     "auditor": "auditor"}
    admin = User.objects.get(username="admin")
    assert admin.is_staff and admin.is_superuser and admin.check_password("demo-admin-pass")
    assert User.objects.get(username="auditor").check_password("demo-auditor-pass")

    agents = {agent.slug: agent for agent in Agent.objects.filter(workspace=workspace)}
    assert set(agents) == {"support-bot", "kyc-analyst", "legal-researcher"}
    assert len({(a.strategy, a.write_policy) for a in agents.values()}) == 3
    for agent in agents.values():
        assert 2 <= agent.tools.count() <= 4
        assert all(tool.parameters["type"] == "object" for tool in agent.tools.all())
        for kind in (FileKind.SOUL, FileKind.ABOUT, FileKind.TOOLS):
            assert services.read_memory(agent=agent, kind=kind).exists
        user_refs = set(MemoryFile.objects.filter(agent=agent, kind=FileKind.MEMORY).values_list("user_ref", flat=True))
        assert 2 <= len(user_refs - set(demo_history.PAIRS[agent.slug])) <= 3

    pending = Proposal.objects.filter(agent__workspace=workspace, status=ProposalStatus.PENDING)
    assert set(pending.values_list("source", flat=True)) == {Source.AGENT, Source.ADMIN, Source.CONSOLIDATION}
    consolidation = pending.get(source=Source.CONSOLIDATION)
    cited = {entry_id for item in consolidation.rationale for entry_id in item["evidence"]}
    assert cited and LogEntry.objects.filter(
        id__in=cited, agent=consolidation.agent, user_ref=consolidation.user_ref
    ).count() == len(cited)
    assert {item["kind"] for item in consolidation.rationale} >= {"add", "update", "supersede", "expire", "merge"}

    ended = AgentSession.objects.filter(agent=agents["support-bot"], user_ref="cust-1042", ended_at__isnull=False)
    assert ended.count() >= 5
    assert set(LogEntry.objects.filter(agent__workspace=workspace).values_list("role", flat=True)) == {
        "user", "assistant", "tool", "note",
    }  # fmt: skip
    # The review-policy agent's files exist because a reviewer approved them.
    kyc_soul = MemoryFile.history.filter(agent=agents["kyc-analyst"], kind=FileKind.SOUL).get()
    assert kyc_soul.approved_by.username == "reviewer"
    assert "demo-reviewer2-pass" in out


def test_it_changes_nothing_when_seeding_twice():
    run("seed_demo")
    before = row_counts()

    out, _ = run("seed_demo")

    assert row_counts() == before
    assert "nothing was added" in out


def test_it_completes_a_partly_seeded_database_and_keeps_what_exists():
    run("create_staff", "admin", "--workspace", "demo", "--role", "admin", "--password", "my-own-admin-pass-7")

    demo.seed_demo()

    admin = User.objects.get(username="admin")
    assert admin.check_password("my-own-admin-pass-7")
    assert admin.is_superuser
    assert Membership.objects.filter(workspace__slug="demo").count() == len(demo.STAFF)
    assert Agent.objects.filter(workspace__slug="demo").count() == 3
