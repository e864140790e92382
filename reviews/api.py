"""The staff REST API (API.md, "Staff" and "Added in v1.1"): proposals and
their decisions, file history, rollback, withhold and release, agent
settings and governance changes.

Each view parses input, fetches its object through a scoped lookup (another
workspace's object is a 404), calls one service operation with the signed-in
user as the acting principal, and shapes the answer. The rules — role,
four-eyes, conflicts, staleness, limits, scanner — live in the services.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response

from memoryhub import errors, idempotency, services
from memoryhub.api import FILE_PARAM, USER_PARAM, TextField, parse_body, user_param
from memoryhub.models import Agent, Change, ChangeStatus, FileKind, Proposal, ProposalStatus, Source
from memoryhub.rest import StaffAPIView, error_responses


class ProposalPagination(PageNumberPagination):
    page_size = 50
    max_page_size = 200
    page_size_query_param = "page_size"

    def get_page_size(self, request: Request) -> int:
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        try:
            size = int(raw)
        except ValueError as exc:
            raise errors.Invalid(f"page_size must be a whole number from 1 to {self.max_page_size}.",
                                 field="page_size") from exc
        if not 1 <= size <= self.max_page_size:
            raise errors.Invalid(f"page_size must be a whole number from 1 to {self.max_page_size}.",
                                 field="page_size")
        return size


def proposal_summary(p: Proposal) -> dict[str, object]:
    return {
        "id": p.pk,
        "agent": p.agent.slug,
        "user": p.user_ref or None,
        "file": p.kind,
        "source": p.source,
        "status": p.status,
        "base_version": p.base_version,
        "created_at": p.created_at,
        "author": p.author_label,
        "reason": p.reason,
        "risk": p.risk_label,
        "risk_tags": list(p.risk_tags or []),
        "claimed_by": p.claimer_name,
    }


def proposal_detail(p: Proposal) -> dict[str, object]:
    return {
        **proposal_summary(p),
        "base_content": p.base_content,
        "proposed_content": p.proposed_content,
        "diff": p.diff,
        "rationale": p.rationale,
        "decided_by": p.decider_name,
        "decided_at": p.decided_at,
        "decision_comment": p.decision_comment,
        "reason_code": p.reason_code,
        "first_approved_by": p.first_approved_by_username or None,
        "applied_version": p.applied_version,
        "superseded_by": p.superseded_by_id,
        "revises": p.revises_id,
        "rollback_to": p.rollback_to,
    }


class ProposalSummarySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    agent = serializers.CharField()
    user = serializers.CharField(allow_null=True)
    file = serializers.ChoiceField(choices=FileKind.values)
    # "source" is the API's field name; the stubs confuse it with Field.source.
    source = serializers.ChoiceField(choices=Source.values)  # type: ignore[assignment]
    status = serializers.ChoiceField(choices=ProposalStatus.values)
    base_version = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    author = serializers.CharField()
    reason = serializers.CharField()
    risk = serializers.ChoiceField(choices=["low", "medium", "high"])
    risk_tags = serializers.ListField(child=serializers.CharField())
    claimed_by = serializers.CharField(allow_null=True)


class ProposalDetailSerializer(ProposalSummarySerializer):
    base_content = serializers.CharField()
    proposed_content = serializers.CharField()
    diff = serializers.CharField()
    rationale = serializers.ListField(child=serializers.DictField())
    decided_by = serializers.CharField(allow_null=True)
    decided_at = serializers.DateTimeField(allow_null=True)
    decision_comment = serializers.CharField()
    reason_code = serializers.CharField()
    first_approved_by = serializers.CharField(allow_null=True)
    applied_version = serializers.IntegerField(allow_null=True)
    superseded_by = serializers.IntegerField(allow_null=True)
    revises = serializers.IntegerField(allow_null=True)
    rollback_to = serializers.IntegerField(allow_null=True)


class CommentSerializer(serializers.Serializer):
    comment = TextField(required=False, allow_blank=True, default="", max_length=2000)


class DecisionSerializer(CommentSerializer):
    reason_code = TextField(required=False, allow_blank=True, default="", max_length=32)


class ApproveSerializer(DecisionSerializer):
    acknowledge_personal_data = serializers.BooleanField(
        required=False, default=False,
        help_text="Required (true) when the proposal carries personal data of a special category: the reviewer "
        "confirms the agent needs it.")


class RejectSerializer(serializers.Serializer):
    # A comment or a reason code says why (the service checks one is there).
    comment = TextField(required=False, allow_blank=True, default="", max_length=2000)
    reason_code = TextField(required=False, allow_blank=True, default="", max_length=32)


class RequiredCommentSerializer(serializers.Serializer):
    comment = TextField(max_length=2000)


class ReasonSerializer(serializers.Serializer):
    reason = TextField(max_length=1000)


class PendingProposalSerializer(serializers.Serializer):
    proposal = serializers.IntegerField()
    status = serializers.CharField()


class PendingChangeSerializer(serializers.Serializer):
    change = serializers.IntegerField()
    status = serializers.CharField()


# --- proposals ------------------------------------------------------------------------------


class ProposalListView(StaffAPIView):
    class PageSerializer(serializers.Serializer):
        count = serializers.IntegerField()
        next = serializers.CharField(allow_null=True)
        previous = serializers.CharField(allow_null=True)
        results = ProposalSummarySerializer(many=True)

    @extend_schema(
        operation_id="list_proposals",
        parameters=[
            OpenApiParameter("status", str, enum=ProposalStatus.values),
            OpenApiParameter("agent", str, description="Agent slug."),
            OpenApiParameter("file", str, enum=FileKind.values),
            OpenApiParameter("source", str, enum=Source.values),
            OpenApiParameter("user", {"type": "string", "maxLength": 255}),
            OpenApiParameter("claimed", str, enum=["mine", "unclaimed", "others"],
                             description="Claimed by me, by nobody, or by someone else."),
            OpenApiParameter("sort", str, enum=["age", "risk"], description="Oldest first (default) or highest "
                             "risk first, then oldest."),
            OpenApiParameter("page", {"type": "integer", "minimum": 1}),
            OpenApiParameter("page_size", {"type": "integer", "minimum": 1, "maximum": 200}),
        ],
        responses={200: PageSerializer, **error_responses(400, 401, 403, 404, 429)},
    )
    def get(self, request: Request) -> Response:
        proposals = services.visible_proposals(request.user).order_by("created_at", "id")
        filters = {
            "status": ("status", ProposalStatus.values),
            "file": ("kind", FileKind.values),
            "source": ("source", Source.values),
        }
        for param, (field, allowed) in filters.items():
            value = request.query_params.get(param)
            if value:
                if value not in allowed:
                    raise errors.Invalid(f"{param} must be one of {', '.join(allowed)}.", field=param)
                proposals = proposals.filter(**{field: value})
        if slug := request.query_params.get("agent"):
            proposals = proposals.filter(agent=services.get_agent_for_user(request.user, slug))
        if user_ref := request.query_params.get("user"):
            proposals = proposals.filter(user_ref=services.validate_user_ref(user_ref))
        claimed = request.query_params.get("claimed")
        if claimed == "mine":
            proposals = proposals.filter(claimed_by_id=request.user.pk)
        elif claimed == "unclaimed":
            proposals = proposals.filter(claimed_by__isnull=True)
        elif claimed == "others":
            proposals = proposals.filter(claimed_by__isnull=False).exclude(claimed_by_id=request.user.pk)
        elif claimed:
            raise errors.Invalid("claimed must be one of mine, unclaimed, others.", field="claimed")
        sort = request.query_params.get("sort") or "age"
        if sort not in ("age", "risk"):
            raise errors.Invalid("sort must be age or risk.", field="sort")
        if sort == "risk":
            proposals = proposals.order_by("-risk_level", "created_at", "id")
        paginator = ProposalPagination()
        page = paginator.paginate_queryset(proposals, request, view=self)
        return paginator.get_paginated_response([proposal_summary(p) for p in page or []])


class ProposalDetailView(StaffAPIView):
    @extend_schema(
        operation_id="get_proposal",
        responses={200: ProposalDetailSerializer, **error_responses(401, 403, 404, 429)},
    )
    def get(self, request: Request, proposal_id: int) -> Response:
        return Response(proposal_detail(services.get_proposal_for_user(request.user, proposal_id)))


class ProposalApproveView(StaffAPIView):
    class OutputSerializer(serializers.Serializer):
        status = serializers.CharField()
        version = serializers.IntegerField(allow_null=True)
        stale_siblings = serializers.ListField(child=serializers.IntegerField())
        approvals = serializers.IntegerField(required=False)

    @extend_schema(
        operation_id="approve_proposal",
        request=ApproveSerializer,
        responses={200: OutputSerializer, **error_responses(400, 401, 403, 404, 409, 422, 429)},
        description="409 `stale_proposal` when the file moved on, 409 `conflict` while the content holds "
        "unresolved conflict blocks, 403 `four_eyes` for anyone who wrote a revision of the proposal, 403 "
        "`high_risk` when the workspace lets only an admin approve a high-risk proposal. Under the "
        "`two_approvals` rule the first approval of a high-risk proposal answers `status: pending, approvals: 1`. "
        "`stale_siblings` lists the same file's pending proposals this approval made stale. 409 `personal_data` "
        "when the proposal carries personal data of a special category and `acknowledge_personal_data` is not true.",
    )
    def post(self, request: Request, proposal_id: int) -> Response:
        proposal = services.get_proposal_for_user(request.user, proposal_id)
        data = parse_body(ApproveSerializer, request)
        proposal = services.approve_proposal(proposal_id=proposal.pk, reviewer=request.user, comment=data["comment"],
                                             reason_code=data["reason_code"],
                                             acknowledge_personal_data=data["acknowledge_personal_data"])
        answer: dict[str, object] = {"status": proposal.status, "version": proposal.applied_version,
                                  "stale_siblings": list(proposal.stale_siblings)}
        if proposal.status == ProposalStatus.PENDING:
            answer["approvals"] = 1
        return Response(answer)


class ProposalRejectView(StaffAPIView):
    class OutputSerializer(serializers.Serializer):
        status = serializers.CharField()

    @extend_schema(
        operation_id="reject_proposal",
        request=RejectSerializer,
        responses={200: OutputSerializer, **error_responses(400, 401, 403, 404, 409, 429)},
        description="Say why with a `comment`, a `reason_code` from the workspace's list, or both.",
    )
    def post(self, request: Request, proposal_id: int) -> Response:
        proposal = services.get_proposal_for_user(request.user, proposal_id)
        data = parse_body(RejectSerializer, request)
        proposal = services.reject_proposal(proposal_id=proposal.pk, reviewer=request.user, comment=data["comment"],
                                            reason_code=data["reason_code"])
        return Response({"status": proposal.status})


class ProposalBulkView(StaffAPIView):
    class InputSerializer(serializers.Serializer):
        ids = serializers.ListField(child=serializers.IntegerField(min_value=1, max_value=2**31 - 1),
                                    allow_empty=False)
        action = serializers.ChoiceField(choices=["approve", "reject"])
        # Required; checked by the service, which says so the same way everywhere.
        reason_code = TextField(required=False, allow_blank=True, default="", max_length=32)
        comment = TextField(required=False, allow_blank=True, default="", max_length=2000)

    class OutputSerializer(serializers.Serializer):
        batch = serializers.CharField()
        results = serializers.ListField(child=serializers.DictField())

    @extend_schema(
        operation_id="decide_proposals_in_bulk",
        request=InputSerializer,
        responses={200: OutputSerializer, **error_responses(400, 401, 403, 422, 429)},
        description="Up to 50 proposals, one reason code. Each item passes every rule of the single call and is "
        "listed with its new `status` or its `error` (`four_eyes`, `stale_proposal`, `conflict`, "
        "`needs_single_review` for persona files and scanner or personal-data findings, `not_found`, …); the "
        "others are decided. 422 `batch_too_large` over 50. Every item gets one audit event with the batch id.",
    )
    def post(self, request: Request) -> Response:
        data = parse_body(self.InputSerializer, request)
        result = services.decide_bulk(ids=data["ids"], action=data["action"], reason_code=data["reason_code"],
                                      comment=data["comment"], actor=request.user)
        return Response({"batch": result.batch, "results": [item.as_dict() for item in result.items]})


class ProposalClaimSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    claimed_by = serializers.CharField(allow_null=True)
    claimed_at = serializers.DateTimeField(allow_null=True)


class ProposalClaimView(StaffAPIView):
    @extend_schema(
        operation_id="claim_proposal",
        request=None,
        responses={200: ProposalClaimSerializer, **error_responses(401, 403, 404, 409, 429)},
        description="Advisory: others see who claimed it and may still decide it. 409 `claimed` when someone "
        "else holds the claim; 403 `four_eyes` for its author.",
    )
    def post(self, request: Request, proposal_id: int) -> Response:
        proposal = services.get_proposal_for_user(request.user, proposal_id)
        proposal = services.claim_proposal(proposal_id=proposal.pk, actor=request.user)
        return Response({"id": proposal.pk, "claimed_by": proposal.claimer_name, "claimed_at": proposal.claimed_at})


class ProposalUnclaimView(StaffAPIView):
    @extend_schema(
        operation_id="unclaim_proposal",
        request=None,
        responses={200: ProposalClaimSerializer, **error_responses(400, 401, 403, 404, 409, 429)},
        description="The claimer, or an admin, releases a claim.",
    )
    def post(self, request: Request, proposal_id: int) -> Response:
        proposal = services.get_proposal_for_user(request.user, proposal_id)
        proposal = services.unclaim_proposal(proposal_id=proposal.pk, actor=request.user)
        return Response({"id": proposal.pk, "claimed_by": None, "claimed_at": None})


class ProposalWithdrawView(StaffAPIView):
    class OutputSerializer(serializers.Serializer):
        status = serializers.CharField()

    @extend_schema(
        operation_id="withdraw_proposal",
        request=CommentSerializer,
        responses={200: OutputSerializer, **error_responses(400, 401, 403, 404, 409, 429)},
        description="The author of a proposal takes it back (authors cannot approve or reject their own).",
    )
    def post(self, request: Request, proposal_id: int) -> Response:
        proposal = services.get_proposal_for_user(request.user, proposal_id)
        data = parse_body(CommentSerializer, request)
        proposal = services.withdraw_proposal(proposal_id=proposal.pk, actor=request.user, comment=data["comment"])
        return Response({"status": proposal.status})


class ProposalRebaseView(StaffAPIView):
    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        status = serializers.CharField()
        conflicts = serializers.BooleanField()

    @extend_schema(
        operation_id="rebase_proposal",
        request=None,
        responses={200: OutputSerializer, **error_responses(400, 401, 403, 404, 409, 422, 429)},
        description="A new proposal on the current version (three-way merge); `conflicts` says whether it holds "
        "conflict blocks that must be edited away before approval.",
    )
    def post(self, request: Request, proposal_id: int) -> Response:
        from memoryhub.merge import has_conflict_markers

        proposal = services.get_proposal_for_user(request.user, proposal_id)
        rebased = services.rebase_proposal(proposal_id=proposal.pk, reviewer=request.user)
        return Response({"id": rebased.pk, "status": rebased.status,
                         "conflicts": has_conflict_markers(rebased.proposed_content)})


# --- files -----------------------------------------------------------------------------------


class VersionSerializer(serializers.Serializer):
    version = serializers.IntegerField()
    content = serializers.CharField()
    created_at = serializers.DateTimeField()
    author = serializers.CharField()
    source = serializers.CharField()  # type: ignore[assignment]  # the API's field name, not Field.source
    reason = serializers.CharField()
    approved_by = serializers.CharField(allow_null=True)
    proposal = serializers.IntegerField(allow_null=True)


def history_author(row: Any) -> str:
    # The name stored with the row: a rename does not rewrite history.
    return str(row.author_label)


class FileVersionsView(StaffAPIView):
    @extend_schema(
        operation_id="list_file_versions",
        parameters=[FILE_PARAM, USER_PARAM],
        responses={200: VersionSerializer(many=True), **error_responses(400, 401, 403, 404, 429)},
    )
    def get(self, request: Request, slug: str, file: str) -> Response:
        agent = services.get_agent_for_user(request.user, slug)
        rows = services.file_versions(agent=agent, kind=file, user_ref=user_param(request, required=False))
        return Response(
            [
                {
                    "version": row.version,
                    "content": row.content,
                    "created_at": row.history_date,
                    "author": history_author(row),
                    "source": row.source,
                    "reason": row.history_change_reason or "",
                    "approved_by": row.approver_name,
                    "proposal": row.proposal_id,
                }
                for row in rows
            ]
        )


class FileRollbackView(StaffAPIView):
    class InputSerializer(serializers.Serializer):
        version = serializers.IntegerField(min_value=1, max_value=2**31 - 1)
        reason = TextField(max_length=1000)

    @extend_schema(
        operation_id="rollback_file",
        parameters=[FILE_PARAM, USER_PARAM, idempotency.PARAMETER],
        request=InputSerializer,
        responses={202: PendingProposalSerializer, **error_responses(400, 401, 403, 404, 409, 422, 429)},
        description="A rollback is a proposal (source `rollback`) that another reviewer approves; approving it "
        "serves the old content as a new version and reaches open sessions too.",
    )
    @idempotency.idempotent
    def post(self, request: Request, slug: str, file: str) -> Response:
        agent = services.get_agent_for_user(request.user, slug)
        data = parse_body(self.InputSerializer, request)
        proposal = services.propose_rollback(
            agent=agent, kind=file, user_ref=user_param(request, required=False), to_version=data["version"],
            actor=request.user, reason=data["reason"],
        )
        return Response({"proposal": proposal.pk, "status": "pending"}, status=status.HTTP_202_ACCEPTED)


class FileWithholdView(StaffAPIView):
    class OutputSerializer(serializers.Serializer):
        file = serializers.CharField()
        version = serializers.IntegerField()
        withheld = serializers.BooleanField()
        withheld_at = serializers.DateTimeField()

    @extend_schema(
        operation_id="withhold_file",
        parameters=[FILE_PARAM, USER_PARAM],
        request=ReasonSerializer,
        responses={200: OutputSerializer, **error_responses(400, 401, 403, 404, 429)},
        description="Takes the current version out of service at once: every context and open session serves "
        "[WITHHELD] until a rollback or a release is approved by a second person.",
    )
    def post(self, request: Request, slug: str, file: str) -> Response:
        agent = services.get_agent_for_user(request.user, slug)
        data = parse_body(ReasonSerializer, request)
        row = services.withhold_file(agent=agent, kind=file, user_ref=user_param(request, required=False),
                                     actor=request.user, reason=data["reason"])
        return Response({"file": row.kind, "version": row.version, "withheld": True,
                         "withheld_at": row.withheld_at})


class FileReleaseView(StaffAPIView):
    @extend_schema(
        operation_id="release_file",
        parameters=[FILE_PARAM, USER_PARAM],
        request=ReasonSerializer,
        responses={202: PendingChangeSerializer, **error_responses(400, 401, 403, 404, 429)},
        description="Four-eyes: records a pending change that a different reviewer or admin approves.",
    )
    def post(self, request: Request, slug: str, file: str) -> Response:
        agent = services.get_agent_for_user(request.user, slug)
        data = parse_body(ReasonSerializer, request)
        change = services.request_release(agent=agent, kind=file, user_ref=user_param(request, required=False),
                                          actor=request.user, reason=data["reason"])
        return Response({"change": change.pk, "status": change.status}, status=status.HTTP_202_ACCEPTED)


# --- agents ------------------------------------------------------------------------------------


def agent_detail(agent: Agent) -> dict[str, object]:
    return {
        "slug": agent.slug,
        "workspace": agent.workspace.slug,
        "name": agent.name,
        "description": agent.description,
        "is_active": agent.is_active,
        "strategy": agent.strategy,
        "write_policy": agent.write_policy,
        "backend": agent.consolidation_backend,
        "token_encoding": agent.token_encoding,
        "limits": {kind: agent.limit_for(kind) for kind in FileKind.values},
        "gate_hours": agent.gate_hours,
        "gate_sessions": agent.gate_sessions,
        "daily_budget_usd": str(agent.daily_budget_usd),
        "staleness_ttl_days": agent.staleness_ttl_days,
        "spotlighting": agent.spotlighting,
        "created_at": agent.created_at,
        "updated_at": agent.updated_at,
    }


class AgentSerializer(serializers.Serializer):
    slug = serializers.CharField()
    workspace = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField()
    is_active = serializers.BooleanField()
    strategy = serializers.CharField()
    write_policy = serializers.CharField()
    backend = serializers.CharField()
    token_encoding = serializers.CharField()
    limits = serializers.DictField(child=serializers.IntegerField())
    gate_hours = serializers.IntegerField()
    gate_sessions = serializers.IntegerField()
    daily_budget_usd = serializers.CharField()
    staleness_ttl_days = serializers.IntegerField()
    spotlighting = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


_LIMIT_FIELDS = {kind: f"limit_{kind.removesuffix('.md').lower()}" for kind in FileKind.values}


class AgentDetailView(StaffAPIView):
    class PatchSerializer(serializers.Serializer):
        name = TextField(required=False, max_length=200)
        description = TextField(required=False, allow_blank=True, max_length=2000)
        strategy = serializers.ChoiceField(required=False, choices=["full", "on_demand", "hybrid_v1", "hybrid_v2"])
        write_policy = serializers.ChoiceField(required=False, choices=["direct", "review"])
        backend = serializers.ChoiceField(required=False, choices=["heuristic", "llm"])
        token_encoding = TextField(required=False, max_length=32)
        limits = serializers.DictField(required=False, child=serializers.IntegerField(min_value=1, max_value=100_000),
                                       help_text="Per file, e.g. {\"MEMORY.md\": 6000}.")
        gate_hours = serializers.IntegerField(required=False, min_value=0, max_value=24 * 365)
        gate_sessions = serializers.IntegerField(required=False, min_value=0, max_value=10_000)
        daily_budget_usd = serializers.DecimalField(required=False, max_digits=10, decimal_places=4, min_value=0,
                                                    max_value=100_000, coerce_to_string=True)
        staleness_ttl_days = serializers.IntegerField(required=False, min_value=0, max_value=3650)
        spotlighting = serializers.BooleanField(
            required=False,
            help_text="Serve agent+user memory as marked data (default on); turning it off is four-eyes.",
        )
        reason = TextField(required=False, allow_blank=True, max_length=1000)

    @extend_schema(operation_id="get_agent", responses={200: AgentSerializer, **error_responses(401, 403, 404, 429)})
    def get(self, request: Request, slug: str) -> Response:
        return Response(agent_detail(services.get_agent_for_user(request.user, slug)))

    @extend_schema(
        operation_id="update_agent",
        request=PatchSerializer,
        responses={200: AgentSerializer, 202: PendingChangeSerializer,
                   **error_responses(400, 401, 403, 404, 429)},
        description="200 when applied. A request that weakens the gate (write_policy to direct, a higher limit "
        "or budget, another backend, spotlighting off) is recorded whole as a pending change another admin "
        "approves: 202.",
    )
    def patch(self, request: Request, slug: str) -> Response:
        agent = services.get_agent_for_user(request.user, slug)
        data = parse_body(self.PatchSerializer, request)
        reason = data.pop("reason", "")
        limits = data.pop("limits", None) or {}
        for kind, value in limits.items():
            if kind not in _LIMIT_FIELDS:
                raise errors.Invalid(f"limits names files: {', '.join(FileKind.values)}; got {kind!r}.",
                                     field="limits")
            data[_LIMIT_FIELDS[kind]] = value
        if not data:
            raise errors.Invalid("Send at least one setting to change.")
        update = services.update_agent(agent=agent, settings=data, actor=request.user, reason=reason)
        if update.change is not None:
            return Response({"change": update.change.pk, "status": update.change.status},
                            status=status.HTTP_202_ACCEPTED)
        agent.refresh_from_db()
        return Response(agent_detail(agent))


# --- governance changes ------------------------------------------------------------------------


def change_detail(change: Change) -> dict[str, Any]:
    detail = {
        "id": change.pk,
        "workspace": change.workspace.slug,
        "kind": change.kind,
        "agent": change.agent.slug if change.agent else None,
        "file": change.file_kind or None,
        "user": change.user_ref or None,
        "summary": change.summary,
        "payload": change.payload,
        "reason": change.reason,
        "status": change.status,
        "requested_by": change.requester_name,
        "created_at": change.created_at,
        "decided_by": change.decider_name,
        "decided_at": change.decided_at,
        "decision_comment": change.decision_comment,
        "result": change.result,
    }
    if counts := services.pending_counts(change):
        detail["would_erase"] = counts
    return detail


class ChangeSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    workspace = serializers.CharField()
    kind = serializers.CharField()
    agent = serializers.CharField(allow_null=True)
    file = serializers.CharField(allow_null=True)
    user = serializers.CharField(allow_null=True)
    summary = serializers.CharField()
    payload = serializers.DictField()
    reason = serializers.CharField()
    status = serializers.ChoiceField(choices=ChangeStatus.values)
    requested_by = serializers.CharField()
    created_at = serializers.DateTimeField()
    decided_by = serializers.CharField(allow_null=True)
    decided_at = serializers.DateTimeField(allow_null=True)
    decision_comment = serializers.CharField()
    result = serializers.DictField()
    erased = serializers.DictField(child=serializers.IntegerField(), required=False,
                                   help_text="An approved erasure: how many files, versions, log entries and "
                                   "proposals of the subject were erased.")
    would_erase = serializers.DictField(child=serializers.IntegerField(), required=False,
                                        help_text="A pending erasure: what it would erase, counted now, per kind.")


class ChangeListView(StaffAPIView):
    @extend_schema(
        operation_id="list_changes",
        parameters=[OpenApiParameter("status", str, enum=ChangeStatus.values)],
        responses={200: ChangeSerializer(many=True), **error_responses(400, 401, 403, 429)},
    )
    def get(self, request: Request) -> Response:
        changes = services.visible_changes(request.user).order_by("created_at", "id")
        if value := request.query_params.get("status"):
            if value not in ChangeStatus.values:
                raise errors.Invalid(f"status must be one of {', '.join(ChangeStatus.values)}.", field="status")
            changes = changes.filter(status=value)
        return Response([change_detail(c) for c in changes[:500]])


class ChangeApproveView(StaffAPIView):
    @extend_schema(
        operation_id="approve_change",
        request=CommentSerializer,
        responses={200: ChangeSerializer, **error_responses(400, 401, 403, 404, 409, 429)},
        description="403 `four_eyes` for the requester; 409 `stale_change` when what it would change moved on.",
    )
    def post(self, request: Request, change_id: int) -> Response:
        change = services.get_change_for_user(request.user, change_id)
        data = parse_body(CommentSerializer, request)
        detail = change_detail(services.approve_change(change_id=change.pk, actor=request.user,
                                                       comment=data["comment"]))
        if "erased" in detail["result"]:
            detail["erased"] = detail["result"]["erased"]
        return Response(detail)


class ChangeRejectView(StaffAPIView):
    @extend_schema(
        operation_id="reject_change",
        request=RequiredCommentSerializer,
        responses={200: ChangeSerializer, **error_responses(400, 401, 403, 404, 409, 429)},
    )
    def post(self, request: Request, change_id: int) -> Response:
        change = services.get_change_for_user(request.user, change_id)
        data = parse_body(RequiredCommentSerializer, request)
        return Response(change_detail(services.reject_change(change_id=change.pk, actor=request.user,
                                                             comment=data["comment"])))


class ChangeWithdrawView(StaffAPIView):
    @extend_schema(
        operation_id="withdraw_change",
        request=CommentSerializer,
        responses={200: ChangeSerializer, **error_responses(400, 401, 403, 404, 409, 429)},
    )
    def post(self, request: Request, change_id: int) -> Response:
        change = services.get_change_for_user(request.user, change_id)
        data = parse_body(CommentSerializer, request)
        return Response(change_detail(services.withdraw_change(change_id=change.pk, actor=request.user,
                                                               comment=data["comment"])))

