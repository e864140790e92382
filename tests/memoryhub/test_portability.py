"""Portable agents: export_agent / import_agent, the round trip, and an
import that refuses as a whole."""

from __future__ import annotations

import copy
import json
from datetime import timedelta
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from memoryhub import errors, services
from memoryhub.models import Agent, AuditEvent, MemoryFile, Role, Source, Workspace, WritePolicy
from tests.factories import AgentFactory, ToolFactory, WorkspaceFactory, staff

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_passwords")]


SECRET = "sk-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"


def _export(slug, *flags):
    out = StringIO()
    call_command("export_agent", slug, *flags, stdout=out)
    return json.loads(out.getvalue())


def _import(document, *flags):
    out = StringIO()
    call_command("import_agent", *flags, stdin=StringIO(json.dumps(document)), stdout=out)
    return out.getvalue()


@pytest.fixture
def agent():
    # Provisioned with settings a second admin would have approved (the
    # shell loosens nothing alone; services.agents).
    agent = AgentFactory(slug="helpdesk", name="Help desk", description="Answers riders.", strategy="full",
                         limit_memory=6000, gate_hours=12, daily_budget_usd=Decimal("2.5"))
    ToolFactory(agent=agent, name="lookup_order", description="Finds an order.")
    ToolFactory(agent=agent, name="refund", description="Refunds an order.", position=1)
    for text in ("I am patient.", "I am patient and brief.", "I am brief."):
        services.write_memory(agent=agent, kind="SOUL.md", content=text, reason=f"tone: {text}")
    admin, reviewer = staff(agent.workspace, Role.ADMIN), staff(agent.workspace, Role.REVIEWER)
    proposal = services.propose_persona_edit(agent=agent, kind="ABOUT.md", content="Runs a bike shop.",
                                             reason="first profile", actor_user=admin)
    services.approve_proposal(proposal_id=proposal.pk, reviewer=reviewer, comment="ok")
    for user in ("alice", "bob"):
        services.write_memory(agent=agent, kind="USER.md", user_ref=user, content=f"- {user} likes tea")
        services.write_memory(agent=agent, kind="USER.md", user_ref=user, content=f"- {user} likes green tea")
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="alice", content="- rides gravel")
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="alice", content="")
    return agent


def _without_times(document):
    """The document minus what an import necessarily changes: when and
    from where it was exported, the slug, and when versions were written."""
    document = copy.deepcopy(document)
    for key in ("exported_at", "source"):
        document.pop(key)
    document["agent"].pop("slug")
    for entry in document["files"]:
        for version in entry["versions"]:
            version.pop("imported_at", None)
    return document


def test_it_round_trips_an_agent_through_another_workspace(agent):
    first = _export("helpdesk", "--with-users=history")
    assert (first["format"], first["version"], first["users"]) == ("memoryhub.agent", 1, "history")
    soul = next(f for f in first["files"] if f["file"] == "SOUL.md")
    assert [v["content"] for v in soul["versions"]] == ["I am patient.", "I am patient and brief.", "I am brief."]
    assert soul["versions"][0]["author"] == "agent:helpdesk" and soul["versions"][0]["reason"] == "tone: I am patient."
    about = next(f for f in first["files"] if f["file"] == "ABOUT.md")
    assert about["versions"][0]["source"] == Source.ADMIN and about["versions"][0]["author"].startswith("user:")

    message = _import(first, "--workspace", "elsewhere", "--slug", "helpdesk-2")
    assert "Imported agent helpdesk-2 into workspace elsewhere" in message
    moved = Agent.objects.get(slug="helpdesk-2")
    assert (moved.workspace.slug, moved.strategy, moved.limit_memory, moved.gate_hours, str(moved.daily_budget_usd)) \
        == ("elsewhere", "full", 6000, 12, "2.5000")
    assert [t.name for t in moved.tools.order_by("position")] == ["lookup_order", "refund"]

    second = _export("helpdesk-2", "--with-users=history")
    assert _without_times(second) == _without_times(first)
    # Provenance survives the move; the rows themselves were written now.
    moved_soul = next(f for f in second["files"] if f["file"] == "SOUL.md")
    assert moved_soul["versions"][0]["created_at"] == soul["versions"][0]["created_at"]
    assert "imported_at" in moved_soul["versions"][0]


def test_imported_versions_are_new_rows_written_by_the_system_in_order(agent):
    before = timezone.now()
    services.import_agent(document=_export("helpdesk", "--with-users=history"), actor=services.SYSTEM,
                          workspace="elsewhere", slug="copy")
    rows = list(MemoryFile.history.filter(agent__slug="copy", kind="SOUL.md").order_by("history_id"))
    assert [(r.version, r.content) for r in rows] == [
        (1, "I am patient."), (2, "I am patient and brief."), (3, "I am brief.")]
    assert all(r.history_user_id is None and r.actor_agent_id is None for r in rows)
    assert all(r.history_date >= before for r in rows), "history is never back-dated"
    assert rows[0].source == Source.AGENT and rows[0].history_change_reason == "tone: I am patient."
    event = AuditEvent.objects.get(action="agent.import")
    assert event.details["source"]["agent"] == "helpdesk"
    first_soul = next(v for v in event.details["versions"] if v["file"] == "SOUL.md")
    assert {"user": None, "version": 1, "original_version": 1, "author": "agent:helpdesk"}.items() \
        <= first_soul.items()
    # A file made absent travels as its empty last version.
    memory = MemoryFile.objects.get(agent__slug="copy", kind="MEMORY.md", user_ref="alice")
    assert (memory.version, memory.content) == (2, "")


def test_users_files_travel_only_when_asked(agent):
    bare = _export("helpdesk")
    assert bare["users"] == "none" and {f["user"] for f in bare["files"]} == {None}
    current = _export("helpdesk", "--with-users")
    users = {(f["user"], f["file"]): [v["content"] for v in f["versions"]] for f in current["files"] if f["user"]}
    # Current versions only; alice's MEMORY.md is absent now, so it does not travel.
    assert users == {("alice", "USER.md"): ["- alice likes green tea"], ("bob", "USER.md"): ["- bob likes green tea"]}
    services.import_agent(document=current, actor=services.SYSTEM, slug="light")
    assert MemoryFile.objects.get(agent__slug="light", kind="USER.md", user_ref="bob").version == 1
    assert AuditEvent.objects.filter(action="agent.export", agent=agent).count() == 2


def _nothing_left(slug, workspace=None):
    assert not Agent.objects.filter(slug=slug).exists()
    assert not MemoryFile.objects.filter(agent__slug=slug).exists()
    assert not AuditEvent.objects.filter(action="agent.import").exists()
    if workspace:
        assert not Workspace.objects.filter(slug=workspace).exists()


def test_it_refuses_an_unknown_format_version(agent):
    document = _export("helpdesk")
    document["version"] = 2
    with pytest.raises(CommandError, match="version 2 is not one this installation reads"):
        _import(document, "--slug", "next")
    _nothing_left("next")


def test_it_refuses_an_existing_slug(agent):
    with pytest.raises(CommandError, match="already exists"):
        _import(_export("helpdesk"))
    assert Agent.objects.filter(slug="helpdesk").count() == 1


def test_one_version_the_scanner_refuses_refuses_the_whole_import(agent):
    document = _export("helpdesk", "--with-users=history")
    user = next(f for f in document["files"] if f["user"] == "bob")
    user["versions"][0]["content"] = f"- bob's key is {SECRET}"
    with pytest.raises(CommandError, match=r"USER\.md of bob version 1: Refused by the memory scanner"):
        _import(document, "--workspace", "fresh", "--slug", "scanned")
    _nothing_left("scanned", workspace="fresh")


IBAN = "DE89 3704 0044 0532 0130 00"


def _with_an_iban(document):
    user = next(f for f in document["files"] if f["user"] == "bob")
    user["versions"][0]["content"] = f"- bob pays from {IBAN}"
    return document


def test_a_workspace_that_refuses_personal_data_refuses_an_import_carrying_it(agent):
    # The import passes the same pipeline as every write (services._write.screen):
    # the target workspace's personal-data policy decides, not the source's.
    WorkspaceFactory(slug="strict", pii_policy="refuse")
    document = _with_an_iban(_export("helpdesk", "--with-users=history"))

    with pytest.raises(CommandError, match=r"USER\.md of bob version 1: Refused: this workspace does not keep "
                                           r"personal data in memory \(iban\)"):
        _import(document, "--workspace", "strict", "--slug", "strict-helpdesk")
    _nothing_left("strict-helpdesk")


def test_personal_data_an_import_keeps_is_flagged_in_its_audit_event(agent):
    WorkspaceFactory(slug="flags", pii_policy="flag")
    _import(_with_an_iban(_export("helpdesk", "--with-users=history")), "--workspace", "flags", "--slug", "flagged")

    versions = AuditEvent.objects.get(action="agent.import", agent__slug="flagged").details["versions"]
    flagged = [(v["file"], v["user"], v["original_version"], v["pii"]) for v in versions if "pii" in v]
    assert flagged == [("USER.md", "bob", 1, ["iban"])]
    assert IBAN not in str(versions)


def test_content_over_the_limits_refuses_the_whole_import(agent):
    document = _export("helpdesk")
    document["agent"]["settings"]["limit_soul"] = 10
    with pytest.raises(CommandError, match=r"SOUL\.md version 1: SOUL\.md is limited to 10 characters"):
        _import(document, "--slug", "small")
    _nothing_left("small")


@pytest.mark.parametrize("damage", [
    lambda d: d.pop("files"),
    lambda d: d.update(format="something-else"),
    lambda d: d["files"].append({"file": "USER.md", "user": None, "versions": []}),
    lambda d: d["files"][0]["versions"][0].update(source="telepathy"),
    lambda d: d["files"][0]["versions"][0].update(content=7),
    lambda d: d["agent"]["settings"].update(strategy="psychic"),
    lambda d: d["tools"].append({"name": "bad name!", "description": ""}),
])
def test_it_refuses_a_malformed_document(agent, damage):
    document = _export("helpdesk")
    damage(document)
    with pytest.raises(CommandError, match="Nothing was imported"):
        _import(document, "--slug", "broken")
    _nothing_left("broken")


def test_standard_input_must_be_json():
    with pytest.raises(CommandError, match="not a JSON document"):
        call_command("import_agent", stdin=StringIO("not json"), stdout=StringIO())


def test_an_admin_may_import_into_their_workspace_but_not_weaken_the_gate(agent):
    document = _export("helpdesk")
    target = WorkspaceFactory()
    admin = staff(target, Role.ADMIN)
    with pytest.raises(errors.PermissionDenied):
        services.import_agent(document=document, actor=staff(target, Role.REVIEWER), workspace=target, slug="x")
    with pytest.raises(errors.Invalid, match="request `direct` as a change"):
        services.import_agent(document=document, actor=admin, workspace=target, slug="x")
    document["agent"]["settings"]["write_policy"] = WritePolicy.REVIEW
    with pytest.raises(errors.Invalid, match="weaken the gate"):
        services.import_agent(document=document, actor=admin, workspace=target, slug="x")
    for field in ("limit_memory", "daily_budget_usd"):
        document["agent"]["settings"].pop(field)
    moved = services.import_agent(document=document, actor=admin, workspace=target, slug="x")
    assert moved.workspace == target and moved.write_policy == WritePolicy.REVIEW
    assert MemoryFile.history.filter(agent=moved, kind="SOUL.md").first().history_user == admin


def test_only_admins_export(agent):
    with pytest.raises(errors.PermissionDenied):
        services.export_agent(agent=agent, actor=staff(agent.workspace, Role.AUDITOR))
    chunks = services.export_agent(agent=agent, actor=staff(agent.workspace, Role.ADMIN))
    assert json.loads("".join(chunks))["agent"]["slug"] == "helpdesk"


def test_an_unknown_agent_is_a_command_error():
    with pytest.raises(CommandError, match="no agent"):
        _export("nobody")


def test_it_keeps_history_timestamps_as_exported_text(agent):
    document = _export("helpdesk")
    stamp = (timezone.now() - timedelta(days=400)).isoformat()
    document["files"][0]["versions"][0]["created_at"] = stamp
    services.import_agent(document=document, actor=services.SYSTEM, slug="old")
    again = _export("old")
    assert again["files"][0]["versions"][0]["created_at"] == stamp


def test_import_as_a_named_admin_follows_that_admins_rules(agent):
    document = _export("helpdesk")
    target = WorkspaceFactory(slug="target")
    admin = staff(target, Role.ADMIN)
    document["agent"]["settings"]["write_policy"] = WritePolicy.REVIEW
    with pytest.raises(CommandError, match="Nothing was imported: limit_memory would weaken the gate"):
        _import(document, "--workspace", "target", "--slug", "x", "--as", admin.username)
    _nothing_left("x")
    # At the shell the same document provisions the agent, and says what it loosened.
    _import(document, "--workspace", "target", "--slug", "x")
    event = AuditEvent.objects.get(action="agent.create", agent__slug="x")
    assert event.details["weaker_fields"] == ["limit_memory"]
    assert "set at the shell" in event.summary
