"""The staff REST API for the review workflow (API.md, "Staff")."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response

from memoryhub import errors, services
from memoryhub.api import FILE_PARAM, USER_PARAM, TextField, parse_input, user_param
from memoryhub.models import FileKind, Proposal, ProposalStatus, Source
from memoryhub.rest import StaffAPIView, error_responses
from reviews import access


class ProposalPagination(PageNumberPagination):
    page_size = 50
    max_page_size = 200
    page_size_query_param = "page_size"


def proposal_summary(p: Proposal) -> dict[str, Any]:
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
    }


def proposal_detail(p: Proposal) -> dict[str, Any]:
    return {
        **proposal_summary(p),
        "base_content": p.base_content,
        "proposed_content": p.proposed_content,
        "diff": p.diff,
        "rationale": p.rationale,
        "decided_by": p.decided_by.get_username() if p.decided_by else None,
        "decided_at": p.decided_at,
        "decision_comment": p.decision_comment,
        "applied_version": p.applied_version,
        "superseded_by": p.superseded_by_id,
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


class ProposalDetailSerializer(ProposalSummarySerializer):
    base_content = serializers.CharField()
    proposed_content = serializers.CharField()
    diff = serializers.CharField()
    rationale = serializers.ListField(child=serializers.DictField())
    decided_by = serializers.CharField(allow_null=True)
    decided_at = serializers.DateTimeField(allow_null=True)
    decision_comment = serializers.CharField()
    applied_version = serializers.IntegerField(allow_null=True)
    superseded_by = serializers.IntegerField(allow_null=True)


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
            OpenApiParameter("user", str),
            OpenApiParameter("page", int),
            OpenApiParameter("page_size", int),
        ],
        responses={200: PageSerializer, **error_responses(400, 401, 403, 404, 429)},
    )
    def get(self, request: Request) -> Response:
        proposals = access.visible_proposals(request.user).order_by("created_at", "id")
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
            proposals = proposals.filter(agent=access.get_agent_for_user(request.user, slug))
        if user_ref := request.query_params.get("user"):
            proposals = proposals.filter(user_ref=user_ref)
        paginator = ProposalPagination()
        page = paginator.paginate_queryset(proposals, request, view=self)
        return paginator.get_paginated_response([proposal_summary(p) for p in page or []])


class ProposalDetailView(StaffAPIView):
    @extend_schema(
        operation_id="get_proposal",
        responses={200: ProposalDetailSerializer, **error_responses(401, 403, 404, 429)},
    )
    def get(self, request: Request, proposal_id: int) -> Response:
        return Response(proposal_detail(access.get_proposal_for_user(request.user, proposal_id)))


class ProposalApproveView(StaffAPIView):
    class InputSerializer(serializers.Serializer):
        comment = TextField(required=False, allow_blank=True, default="", max_length=2000)

    class OutputSerializer(serializers.Serializer):
        status = serializers.CharField()
        version = serializers.IntegerField()

    @extend_schema(
        operation_id="approve_proposal",
        request=InputSerializer,
        responses={200: OutputSerializer, **error_responses(400, 401, 403, 404, 409, 422, 429)},
    )
    def post(self, request: Request, proposal_id: int) -> Response:
        proposal = access.get_proposal_for_user(request.user, proposal_id)
        data = parse_input(self.InputSerializer, request.data if request.data else {})
        proposal = services.approve_proposal(proposal_id=proposal.pk, reviewer=request.user, comment=data["comment"])
        return Response({"status": proposal.status, "version": proposal.applied_version})


class ProposalRejectView(StaffAPIView):
    class InputSerializer(serializers.Serializer):
        comment = serializers.CharField(max_length=2000)

    class OutputSerializer(serializers.Serializer):
        status = serializers.CharField()

    @extend_schema(
        operation_id="reject_proposal",
        request=InputSerializer,
        responses={200: OutputSerializer, **error_responses(400, 401, 403, 404, 409, 429)},
    )
    def post(self, request: Request, proposal_id: int) -> Response:
        proposal = access.get_proposal_for_user(request.user, proposal_id)
        data = request.data if isinstance(request.data, dict) else {}
        comment = data.get("comment", "")
        if not isinstance(comment, str):
            raise errors.Invalid("comment must be text.", field="comment")
        proposal = services.reject_proposal(proposal_id=proposal.pk, reviewer=request.user, comment=comment)
        return Response({"status": proposal.status})


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
    if row.history_user_id:
        return f"user:{row.history_user.get_username()}"
    if row.actor_agent_id:
        return f"agent:{row.actor_agent.slug}"
    return "system"


class FileVersionsView(StaffAPIView):
    @extend_schema(
        operation_id="list_file_versions",
        parameters=[FILE_PARAM, USER_PARAM],
        responses={200: VersionSerializer(many=True), **error_responses(400, 401, 403, 404, 429)},
    )
    def get(self, request: Request, slug: str, file: str) -> Response:
        agent = access.get_agent_for_user(request.user, slug)
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
                    "approved_by": row.approved_by.get_username() if row.approved_by_id else None,
                    "proposal": row.proposal_id,
                }
                for row in rows
            ]
        )


class FileRollbackView(StaffAPIView):
    class InputSerializer(serializers.Serializer):
        version = serializers.IntegerField(min_value=1, max_value=2**31 - 1)
        reason = TextField(max_length=1000)

    class OutputSerializer(serializers.Serializer):
        version = serializers.IntegerField()

    @extend_schema(
        operation_id="rollback_file",
        parameters=[FILE_PARAM, USER_PARAM],
        request=InputSerializer,
        responses={200: OutputSerializer, **error_responses(400, 401, 403, 404, 422, 429)},
    )
    def post(self, request: Request, slug: str, file: str) -> Response:
        agent = access.get_agent_for_user(request.user, slug)
        data = parse_input(self.InputSerializer, request.data)
        updated = services.rollback_file(
            agent=agent,
            kind=file,
            user_ref=user_param(request, required=False),
            to_version=data["version"],
            user=request.user,
            reason=data["reason"],
        )
        return Response({"version": updated.version})
