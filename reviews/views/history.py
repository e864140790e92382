"""A memory file's history (`agents/<slug>/files/<file>/history/`: versions,
diff, rollback, withhold, release) and its blame (`…/blame/`).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Protocol

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from consolidation.provenance import evidence_by_entry, line_entry
from memoryhub import errors, selectors, services
from memoryhub.models import Agent, Change, MemoryFile, Proposal, Source
from reviews import diffs
from reviews import forms as action_forms
from reviews.api import history_author
from reviews.http import HtmxHttpRequest, page_or_fragment
from reviews.views.common import can_review, diff_links, file_url, int_or_none, or_404, refusal_status


class VersionRow(Protocol):
    """What these pages read of one row of a file's history (its class is
    built by django-simple-history at run time, so it has no static name)."""

    version: int
    content: str
    source: str
    proposal_id: int | None

    @property
    def proposal(self) -> Proposal: ...  # read only where proposal_id is set


def _versions(request: HtmxHttpRequest, slug: str, kind: str) -> tuple[Agent, str, list[VersionRow]]:
    agent = or_404(services.get_agent_for_user, request.user, slug)
    user_ref = action_forms.FileQueryForm(request.GET).value("user")
    try:
        rows = services.file_versions(agent=agent, kind=kind, user_ref=user_ref or None)
    except (errors.NotFound, errors.Invalid) as exc:
        raise Http404(exc.detail) from exc
    return agent, user_ref, rows


def _history_action(request: HtmxHttpRequest, agent: Agent, kind: str, user_ref: str,
                    form: action_forms.FileActionForm) -> tuple[str, Proposal | MemoryFile | Change]:
    """Run one POSTed action of the history page; returns the message and
    what it made (a rollback proposal, a release change or the file)."""
    action_forms.valid(form)
    action, reason = form.value("action"), form.value("reason")
    if action == "rollback":
        version = form.version_value
        if version is None:
            raise errors.Invalid("Choose a version to roll back to.", field="version")
        rollback = services.propose_rollback(agent=agent, kind=kind, user_ref=user_ref or None, to_version=version,
                                             actor=request.user, reason=reason)
        return (f"Rollback to the content of version {version} proposed as proposal #{rollback.pk}. "
                "Another reviewer has to approve it before it is served (four-eyes rule)."), rollback
    if action == "withhold":
        file = services.withhold_file(agent=agent, kind=kind, user_ref=user_ref or None, actor=request.user,
                                      reason=reason)
        return (f"Withheld: {kind} v{file.version} is no longer served, in new contexts and in open sessions. "
                "Serving it again takes a second reviewer (a release or a rollback)."), file
    if action == "release":
        change = services.request_release(agent=agent, kind=kind, user_ref=user_ref or None, actor=request.user,
                                          reason=reason)
        return (f"Release requested as change #{change.pk}. Another reviewer decides it on the Changes page "
                "(four-eyes rule)."), change
    raise errors.Invalid("Choose rollback, withhold or release.")


@login_required
@require_http_methods(["GET", "POST"])
def file_history(request: HtmxHttpRequest, slug: str, file: str) -> HttpResponse:
    agent, user_ref, rows = _versions(request, slug, file)
    template_name = "reviews/file_history.html"
    if request.method != "POST":
        confirm = action_forms.FileQueryForm(request.GET).number("rollback")
        context = _history_context(request, agent, file, user_ref, rows, confirm)
        return page_or_fragment(request, template_name, context, fragments=("timeline", "version-diff"))
    form = action_forms.FileActionForm(request.POST)
    action = str(form["action"].value() or "")
    try:
        done, made = _history_action(request, agent, file, user_ref, form)
    except errors.DomainError as exc:
        confirm = int_or_none(form["version"].value()) if action == "rollback" else None
        context = _history_context(request, agent, file, user_ref, rows, confirm)
        context.update(error=exc, posted_action=action, posted_reason=form["reason"].value() or "")
        return page_or_fragment(request, template_name, context, fragments=("timeline",),
                                status=refusal_status(request, exc.status))
    if not request.htmx:
        messages.success(request, done)
        if isinstance(made, Proposal):
            return redirect(reverse("proposal", args=[made.pk]))
        return redirect(file_url("file-history", agent.slug, file, user_ref))
    _agent, _user, rows = _versions(request, slug, file)
    context = _history_context(request, agent, file, user_ref, rows, None)
    context.update(done=done, done_proposal=made if isinstance(made, Proposal) else None,
                   done_change=made if isinstance(made, Change) else None)
    return page_or_fragment(request, template_name, context, fragments=("timeline",))


def _history_context(request: HtmxHttpRequest, agent: Agent, kind: str, user_ref: str, rows: list[VersionRow],
                     confirm: int | None) -> dict[str, object]:
    by_version = {row.version: row for row in rows}
    latest = rows[-1].version if rows else 0
    query = action_forms.FileQueryForm(request.GET)
    asked_a, asked_b = query.number("a"), query.number("b")
    b = asked_b if asked_b is not None and asked_b in by_version else latest
    a = asked_a if asked_a is not None and asked_a in by_version else (b - 1 if b - 1 in by_version else b)
    old = by_version[a].content if a in by_version else ""
    new = by_version[b].content if b in by_version else ""
    state = selectors.file_state(agent, kind, user_ref)
    history_url = file_url("file-history", agent.slug, kind, user_ref)
    whole = query.whole
    return {
        "agent": agent,
        "kind": kind,
        "user_ref": user_ref,
        "timeline": [{"row": row, "author": history_author(row)} for row in reversed(rows)],
        "latest": latest,
        "versions": [row.version for row in rows],
        "a": a,
        "b": b,
        "diff": diffs.present(old, new, whole=whole),
        "whole": whole,
        "a_label": f"Version {a}",
        "b_label": f"Version {b}",
        "can_rollback": can_review(request, agent.workspace_id),
        "confirm": by_version.get(confirm) if confirm is not None and confirm != latest else None,
        "file_state": state,
        "withheld": bool(state and state.is_withheld),
        "can_withhold": bool(state and state.exists and not state.is_withheld),
        "release": selectors.pending_release(agent, kind, user_ref) if state and state.is_withheld else None,
        "history_url": history_url,
        "blame_url": file_url("file-blame", agent.slug, kind, user_ref),
        **diff_links(request),
    }


@login_required
@require_GET
def file_blame(request: HtmxHttpRequest, slug: str, file: str) -> HttpResponse:
    agent, user_ref, rows = _versions(request, slug, file)
    # Keyed like diffs.blame's lines: by version number.
    by_version: dict[Hashable, VersionRow] = {row.version: row for row in rows}
    # Per line, what the version that wrote it cited for that very entry
    # (not every id of its run): consolidation keeps evidence per entry.
    per_entry: dict[Hashable, dict[str, list[int]]] = {
        row.version: evidence_by_entry(row.proposal.rationale if row.proposal_id else [], file=file) for row in rows
    }
    # An approved rollback is credited like a revert: its lines are its own
    # (who asked, who approved), each still naming the version that wrote it.
    rollbacks: dict[Hashable, Hashable] = {
        row.version: row.proposal.rollback_to for row in rows
        if row.source == Source.ROLLBACK and row.proposal_id and row.proposal.rollback_to
    }
    blamed = diffs.blame([(row.version, row.content) for row in rows], rollbacks)
    # Evidence belongs to the version that wrote the entry, not to a rollback.
    cited = [per_entry[line.written or line.origin].get(line_entry(line.text), []) if line_entry(line.text) else []
             for line in blamed]
    found = selectors.evidence(agent, user_ref, {i for ids in cited for i in ids})
    lines = [
        {"line": line, "row": by_version[line.origin], "author": history_author(by_version[line.origin]),
         "written": by_version[line.written] if line.written else None,
         "written_by": history_author(by_version[line.written]) if line.written else "",
         "evidence": [found[i] for i in ids if i in found]}
        for line, ids in zip(blamed, cited, strict=True)
    ]
    return TemplateResponse(request, "reviews/file_blame.html", {
        "agent": agent,
        "kind": file,
        "user_ref": user_ref,
        "lines": lines,
        "latest": rows[-1].version if rows else 0,
        "history_url": file_url("file-history", agent.slug, file, user_ref),
    })
