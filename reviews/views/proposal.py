"""One proposal (`proposals/<pk>/`): its place in the reviewer's queue,
review state, the controls this person may use, diffs and evidence, and
the decision POST (approve, reject, withdraw, edit, rebase, claim).
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods
from django_htmx.http import HttpResponseClientRedirect

from memoryhub import errors, policy, risk, selectors, services, tokens
from memoryhub.models import FileKind, Proposal, ProposalStatus, RiskLevel, Source
from memoryhub.scanning.pii import CATEGORY_LABELS
from reviews import diffs, highlight
from reviews import forms as action_forms
from reviews.http import HtmxHttpRequest, page_or_fragment
from reviews.views.common import can_review, diff_links, file_url, or_404, refusal_status
from reviews.views.queue import neighbours, proposal_url, queue_filter_query


def _rationale(proposal: Proposal) -> list[dict[str, object]]:
    """Each change of the rationale with the log entries it cites (scoped to
    the proposal's agent and user) and the ids that were not found."""
    found = selectors.evidence(proposal.agent, proposal.user_ref, selectors.cited_ids(proposal.rationale))
    changes: list[dict[str, object]] = []
    for change in proposal.rationale if isinstance(proposal.rationale, list) else []:
        if not isinstance(change, dict):
            continue
        cited = selectors.cited_ids([change])
        changes.append({
            "kind": str(change.get("kind", "edit")),
            "summary": str(change.get("summary", "")),
            "reason": str(change.get("reason", "")),
            "entries": [found[i] for i in cited if i in found],
            "missing": [i for i in cited if i not in found],
        })
    return changes


def _diff_options(request: HtmxHttpRequest) -> dict[str, bool]:
    query = action_forms.DiffQueryForm(request.GET)
    return {"unified_view": query.unified_view, "whole": query.whole}


def _proposal_context(request: HtmxHttpRequest, proposal: Proposal) -> dict[str, object]:
    """The proposal page: where it sits in the queue, its review state, the
    controls this person may use, the diffs and the evidence."""
    file = services.get_file(agent=proposal.agent, kind=proposal.kind, user_ref=proposal.user_ref)
    current_version = file.version if file else 0
    return {
        "proposal": proposal,
        "agent": proposal.agent,
        "current_version": current_version,
        "file_url": file_url("file-history", proposal.agent.slug, proposal.kind, proposal.user_ref),
        **_queue_navigation(request, proposal),
        **_review_state(request, proposal),
        **_controls(request, proposal, current_version),
        **_diff_context(request, proposal),
        **_evidence(proposal),
        **diff_links(request),
    }


def _queue_navigation(request: HtmxHttpRequest, proposal: Proposal) -> dict[str, object]:
    query = queue_filter_query(request)
    before, after = neighbours(request, proposal)
    return {
        "queue_query": query,
        "action_url": proposal_url(proposal.pk, query),
        "queue_url": reverse("queue") + (f"?{query}" if query else ""),
        "previous_url": proposal_url(before.pk, query) if before else "",
        "next_url": proposal_url(after.pk, query) if after else "",
        "next_pk": after.pk if after else None,
    }


def _review_state(request: HtmxHttpRequest, proposal: Proposal) -> dict[str, object]:
    """Timeline, risk, SLA and claim, as this person reads them."""
    workspace = proposal.agent.workspace
    return {
        "timeline": selectors.proposal_timeline(proposal),
        "reason_codes": workspace.reason_codes,
        "related": selectors.related_proposals(proposal),
        "risk_tags": [(tag, risk.TAG_LABELS.get(tag, tag)) for tag in proposal.risk_tags or []],
        "high_risk_rule": workspace.high_risk_approval if proposal.risk_level == RiskLevel.HIGH else "",
        "sla": selectors.sla_state(created_at=proposal.created_at, sla_hours=workspace.sla_hours,
                                   now=timezone.now()) if proposal.is_open else "",
        "sla_hours": workspace.sla_hours,
        "claimed_by_other": proposal.claimed_by_id is not None and proposal.claimed_by_id != request.user.pk,
        "first_approved_by_me": proposal.first_approved_by_id is not None
        and proposal.first_approved_by_id == request.user.pk,
        "is_author": request.user.pk in policy.authors_of(proposal),
    }


def _controls(request: HtmxHttpRequest, proposal: Proposal, current_version: int) -> dict[str, object]:
    """Which controls to show. Each decision control is shown exactly when
    memoryhub.policy, the rule the service raises, says yes: nobody who wrote
    a revision sees Approve or Reject; the author may take it back instead."""
    actor = request.user
    may_review = can_review(request, proposal.agent.workspace_id)
    behind = proposal.is_open and current_version != proposal.base_version
    return {
        "behind": behind,
        "can_decide": may_review,
        "has_conflicts": diffs.has_conflict_markers(proposal.proposed_content),
        "can_claim": proposal.claimed_by_id is None and policy.claim_proposal(actor=actor, proposal=proposal) is None,
        "can_unclaim": policy.unclaim_proposal(actor=actor, proposal=proposal) is None,
        "can_approve": policy.approve_proposal(actor=actor, proposal=proposal,
                                               current_version=current_version) is None,
        "can_reject": policy.reject_proposal(actor=actor, proposal=proposal) is None,
        "can_withdraw": policy.withdraw_proposal(actor=actor, proposal=proposal) is None,
        "can_edit": may_review and proposal.status == ProposalStatus.PENDING and not behind,
        "can_rebase": may_review and behind and proposal.source != Source.ROLLBACK,
    }


def _diff_context(request: HtmxHttpRequest, proposal: Proposal) -> dict[str, object]:
    """The diff against the base version, and against the revised proposal."""
    options = _diff_options(request)
    revises = proposal.revises if proposal.revises_id else None
    return {
        "view": "unified" if options["unified_view"] else "split",
        "whole": options["whole"],
        "left_label": f"Version {proposal.base_version}" if proposal.base_version else "Empty (new file)",
        "diff": diffs.present(proposal.base_content, proposal.proposed_content, **options),
        "revises": revises,
        "revision_label": f"Proposal #{revises.pk}" if revises else "",
        "revision_diff": diffs.present(revises.proposed_content, proposal.proposed_content, **options)
        if revises else None,
        "stats": diffs.stats(proposal.base_content, proposal.proposed_content),
    }


def _evidence(proposal: Proposal) -> dict[str, object]:
    """Rationale, scanner and directive findings, personal data, size."""
    counter = tokens.counter_for(proposal.agent.token_encoding)
    return {
        "changes": _rationale(proposal),
        "findings": highlight.scanner_findings(proposal.proposed_content),
        "directive_findings": highlight.directive_findings(old=proposal.base_content, new=proposal.proposed_content)
        if "agent_directed" in (proposal.risk_tags or []) else [],
        "special_categories": [CATEGORY_LABELS.get(c, c) for c in services.special_categories(proposal)],
        "size": {
            "chars_before": len(proposal.base_content),
            "chars_after": len(proposal.proposed_content),
            "tokens_before": counter.count(proposal.base_content),
            "tokens_after": counter.count(proposal.proposed_content),
            "limit": proposal.agent.limit_for(proposal.kind),
            "limit_kind": "soft" if proposal.kind == FileKind.MEMORY else "hard",
            "estimated": counter.estimated,
            "encoding": counter.describe()["encoding"],
        },
    }


def _decide(request: HtmxHttpRequest, proposal: Proposal,
            form: action_forms.DecisionForm) -> tuple[str, Proposal | None]:
    """Run one decision; returns the message and, for an edit or rebase, the
    new proposal to go to."""
    action_forms.valid(form)
    action, comment, reason_code = form.value("action"), form.value("comment"), form.value("reason_code")
    if action == "approve":
        acknowledged = form.acknowledged
        done = services.approve_proposal(proposal_id=proposal.pk, reviewer=request.user, comment=comment,
                                         reason_code=reason_code, acknowledge_personal_data=acknowledged)
        if done.status == ProposalStatus.PENDING:
            return ("First approval recorded. This proposal is high risk: a second, different reviewer approves it "
                    "before it is served."), None
        stale = ", ".join(f"#{pk}" for pk in done.stale_siblings)
        return f"Approved. {done.kind} is now version {done.applied_version}." + (
            f" Now stale (they were made from the old version): {stale}." if stale else ""), None
    if action == "reject":
        services.reject_proposal(proposal_id=proposal.pk, reviewer=request.user, comment=comment,
                                 reason_code=reason_code)
        return "Rejected. Nothing served has changed.", None
    if action == "claim":
        services.claim_proposal(proposal_id=proposal.pk, actor=request.user)
        return "Claimed: others see that you are reviewing this proposal.", None
    if action == "unclaim":
        services.unclaim_proposal(proposal_id=proposal.pk, actor=request.user)
        return "Claim released.", None
    if action == "withdraw":
        services.withdraw_proposal(proposal_id=proposal.pk, actor=request.user, comment=comment)
        return "Withdrawn. Nothing served has changed.", None
    if action == "edit":
        revision = services.revise_proposal(proposal_id=proposal.pk, reviewer=request.user,
                                            content=form.value("content"), comment=comment)
        return (f"Your edit is saved as proposal #{revision.pk}. Another reviewer has to approve it "
                "(four-eyes rule)."), revision
    if action == "rebase":
        rebased = services.rebase_proposal(proposal_id=proposal.pk, reviewer=request.user)
        return f"Rebased onto the current version as proposal #{rebased.pk}. Review it and confirm.", rebased
    raise errors.Invalid("Choose approve, reject, withdraw, edit, rebase, claim or unclaim.")


@login_required
@require_http_methods(["GET", "POST"])
def proposal_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    proposal = or_404(services.get_proposal_for_user, request.user, pk)
    template_name = "reviews/proposal.html"
    if request.method != "POST":
        return page_or_fragment(request, template_name, _proposal_context(request, proposal), fragments=("diff",))
    form = action_forms.DecisionForm(request.POST)
    action = str(form["action"].value() or "")
    try:
        done, target = _decide(request, proposal, form)
    except errors.DomainError as exc:
        proposal = services.get_proposal_for_user(request.user, proposal.pk)
        context = _proposal_context(request, proposal)
        context.update(error=exc, posted_action=action, posted_comment=form["comment"].value() or "",
                       posted_content=form["content"].value())
        return page_or_fragment(request, template_name, context, fragments=("decision",),
                                status=refusal_status(request, exc.status))
    query = queue_filter_query(request)
    url = proposal_url((target or proposal).pk, query)
    if target is None and form.go_next:
        # "Approve & next" / "Reject & next": on to the next proposal waiting
        # in the reviewer's filter, or back to the (now shorter) queue.
        _before, after = neighbours(request, proposal)
        url = proposal_url(after.pk, query) if after else reverse("queue") + (f"?{query}" if query else "")
        if after is None:
            done += " Nothing else is waiting in this filter."
        messages.success(request, done)
        return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
    if target is not None or not request.htmx:
        messages.success(request, done)
        return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
    proposal = services.get_proposal_for_user(request.user, proposal.pk)
    context = _proposal_context(request, proposal)
    context.update(done=done, pending_badge=selectors.pending_proposal_count(request.user))
    return page_or_fragment(request, template_name, context, fragments=("decision",))
