"""E-mails through Django's mail backend (the locmem outbox in tests): new
high-risk proposals, proposals past the SLA, failed consolidation runs;
each person chooses which they get."""

from __future__ import annotations

from typing import Any

import pytest
from django.core import mail

from consolidation import services as consolidation
from consolidation.models import ConsolidationRun, RunStatus
from memoryhub import services
from memoryhub.models import RiskLevel, Role, WritePolicy
from notifications import services as notify
from notifications.models import EmailNotice, NoticeKind, NotificationPreference
from tests.clock import later
from tests.factories import AgentFactory, WorkspaceFactory, staff

pytestmark = pytest.mark.django_db


@pytest.fixture
def workspace() -> Any:
    return WorkspaceFactory(slug="bank")


@pytest.fixture
def people(workspace: Any) -> dict[str, Any]:
    return {
        "admin": staff(workspace, Role.ADMIN, username="ada", email="ada@example.com"),
        "reviewer": staff(workspace, Role.REVIEWER, username="rui", email="rui@example.com"),
        "auditor": staff(workspace, Role.AUDITOR, username="aud", email="aud@example.com"),
        "no_mail": staff(workspace, Role.REVIEWER, username="nomail", email=""),
    }


def _agent(workspace: Any) -> Any:
    return AgentFactory(workspace=workspace, slug="teller", write_policy=WritePolicy.REVIEW)


def test_a_persona_proposal_is_high_risk_and_reviewers_hear_of_it(workspace: Any, people: dict[str, Any]) -> None:
    agent = _agent(workspace)
    proposal = services.propose_persona_edit(agent=agent, kind="SOUL.md", content="You are careful.",
                                             reason="tone", actor_user=people["admin"])
    # Reviewers and admins with an address; not the auditor, not the author (ada).
    assert notify.send_pending_notices() == 1
    assert [m.to for m in mail.outbox] == [["rui@example.com"]]
    message = mail.outbox[0]
    assert f"#{proposal.pk}" in message.subject and "High-risk" in message.subject
    assert f"/proposals/{proposal.pk}/" in message.body
    assert "careful" not in message.body  # no memory content by e-mail either
    assert notify.send_pending_notices() == 0


def test_an_ordinary_proposal_sends_no_mail(workspace: Any, people: dict[str, Any]) -> None:
    services.write_memory(agent=_agent(workspace), kind="MEMORY.md", user_ref="alice", content="- likes tea")
    notify.send_pending_notices()
    assert mail.outbox == []


def test_personal_data_makes_a_proposal_high_risk(workspace: Any, people: dict[str, Any]) -> None:
    result = services.write_memory(agent=_agent(workspace), kind="MEMORY.md", user_ref="alice",
                                   content="- IBAN DE89 3704 0044 0532 0130 00 for refunds")
    assert result.proposal is not None and result.proposal.pii
    assert notify.is_high_risk(result.proposal)
    assert notify.send_pending_notices() == 2


def test_the_computed_risk_level_decides(workspace: Any, people: dict[str, Any]) -> None:
    agent = _agent(workspace)
    ordinary = services.write_memory(agent=agent, kind="MEMORY.md", user_ref="alice", content="- likes tea").proposal
    persona = services.propose_persona_edit(agent=agent, kind="ABOUT.md", content="A teller.", reason="profile",
                                            actor_user=people["admin"])
    assert ordinary is not None and ordinary.risk_level == RiskLevel.LOW
    assert not notify.is_high_risk(ordinary)
    assert persona.risk_level == RiskLevel.HIGH and notify.is_high_risk(persona)


def test_a_person_who_turned_an_e_mail_off_does_not_get_it(client: Any, workspace: Any,
                                                           people: dict[str, Any]) -> None:
    client.force_login(people["reviewer"])
    page = client.get("/settings/notifications/")
    assert page.status_code == 200 and 'name="high_risk" checked' in page.content.decode()
    saved = client.post("/settings/notifications/", {"overdue": "on", "run_failed": "on"})
    assert saved.status_code == 302
    pref = NotificationPreference.objects.get(user=people["reviewer"])
    assert (pref.high_risk, pref.overdue, pref.run_failed) == (False, True, True)
    staff(workspace, Role.REVIEWER, username="rae", email="rae@example.com")
    services.propose_persona_edit(agent=_agent(workspace), kind="SOUL.md", content="You are careful.",
                                  reason="tone", actor_user=people["admin"])
    notify.send_pending_notices()
    assert [m.to for m in mail.outbox] == [["rae@example.com"]]  # rui turned it off; ada wrote it


def test_a_proposal_past_the_sla_is_announced_once(workspace: Any, people: dict[str, Any]) -> None:
    services.write_memory(agent=_agent(workspace), kind="MEMORY.md", user_ref="alice", content="- likes tea")
    assert notify.queue_overdue(now=later(hours=23)) == 0
    assert notify.queue_overdue(now=later(hours=25)) == 2
    assert notify.queue_overdue(now=later(hours=26)) == 0
    notify.send_pending_notices()
    assert len(mail.outbox) == 2 and all("Overdue" in m.subject for m in mail.outbox)


def test_a_decided_proposal_is_never_overdue(workspace: Any, people: dict[str, Any]) -> None:
    proposal = services.write_memory(agent=_agent(workspace), kind="MEMORY.md", user_ref="alice",
                                     content="- likes tea").proposal
    services.reject_proposal(proposal_id=proposal.pk, reviewer=people["reviewer"], comment="no")
    assert notify.queue_overdue(now=later(hours=48)) == 0


def test_a_failed_run_is_announced(workspace: Any, people: dict[str, Any]) -> None:
    agent = _agent(workspace)
    run = ConsolidationRun.objects.create(agent=agent, user_ref="alice", status=RunStatus.RUNNING,
                                          backend="heuristic", attempts=1)
    assert consolidation.fail_run(run_id=run.pk, reason="The model server refused the request.")
    assert set(EmailNotice.objects.values_list("kind", flat=True)) == {NoticeKind.RUN_FAILED}
    notify.send_pending_notices()
    assert len(mail.outbox) == 2
    assert f"run #{run.pk}" in mail.outbox[0].subject and "refused" not in mail.outbox[0].body


def test_a_mail_server_error_leaves_the_notice_to_retry(settings: Any, workspace: Any,
                                                        people: dict[str, Any]) -> None:
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", 9, 2
    services.propose_persona_edit(agent=_agent(workspace), kind="SOUL.md", content="You are careful.",
                                  reason="tone", actor_user=people["admin"])
    assert notify.send_pending_notices() == 0
    notice = EmailNotice.objects.first()
    assert notice is not None and notice.status == "pending" and notice.attempts == 1 and notice.error
