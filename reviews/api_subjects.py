"""Data subjects in the staff REST API (API.md, "Added in v1.1"):
`GET /api/v1/subjects/U/export` streams everything held about end user U;
`POST /api/v1/subjects/U/erasure` asks to erase them (four-eyes: a pending
change another admin approves with `POST /api/v1/changes/ID/approve`).

The view parses the path and `?workspace=`, calls services.export_subject
(which checks the role and writes the audit event) and streams the JSON it
yields. Errors are raised before the first byte, so they leave as the API's
error body with their 4xx.
"""

from __future__ import annotations

from django.http import StreamingHttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from memoryhub import services
from memoryhub.api import USER_SCHEMA, TextField, parse_body
from memoryhub.models import FileKind
from memoryhub.rest import StaffAPIView, error_responses


class SubjectFileSerializer(serializers.Serializer):
    agent = serializers.CharField()
    file = serializers.ChoiceField(choices=FileKind.values)
    version = serializers.IntegerField()
    exists = serializers.BooleanField()
    content = serializers.CharField()
    updated_at = serializers.DateTimeField()
    withheld = serializers.BooleanField()


class SubjectVersionSerializer(serializers.Serializer):
    agent = serializers.CharField()
    file = serializers.ChoiceField(choices=FileKind.values)
    version = serializers.IntegerField()
    content = serializers.CharField()
    created_at = serializers.DateTimeField()
    author = serializers.CharField()
    source = serializers.CharField()  # type: ignore[assignment]  # the API's field name, not Field.source
    reason = serializers.CharField()
    proposal = serializers.IntegerField(allow_null=True)
    approved_by = serializers.CharField(allow_null=True)


class SubjectProposalSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    agent = serializers.CharField()
    file = serializers.ChoiceField(choices=FileKind.values)
    status = serializers.CharField()
    source = serializers.CharField()  # type: ignore[assignment]
    author = serializers.CharField()
    created_at = serializers.DateTimeField()
    base_version = serializers.IntegerField()
    base_content = serializers.CharField()
    proposed_content = serializers.CharField()
    diff = serializers.CharField()
    rationale = serializers.ListField(child=serializers.DictField())
    reason = serializers.CharField()
    decided_by = serializers.CharField(allow_null=True)
    decided_at = serializers.DateTimeField(allow_null=True)
    decision_comment = serializers.CharField()
    applied_version = serializers.IntegerField(allow_null=True)


class SubjectSessionSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    agent = serializers.CharField()
    external_id = serializers.CharField()
    started_at = serializers.DateTimeField()
    ended_at = serializers.DateTimeField(allow_null=True)
    snapshot = serializers.DictField()


class SubjectLogEntrySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    session = serializers.IntegerField()
    agent = serializers.CharField()
    role = serializers.CharField()
    content = serializers.CharField()
    created_at = serializers.DateTimeField()


class SubjectChangeSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField()
    agent = serializers.CharField(allow_null=True)
    file = serializers.CharField(allow_null=True)
    status = serializers.CharField()
    summary = serializers.CharField()
    reason = serializers.CharField()
    requested_by = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    decided_by = serializers.CharField(allow_null=True)
    decided_at = serializers.DateTimeField(allow_null=True)


class SubjectRunSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    agent = serializers.CharField()
    status = serializers.CharField()
    trigger = serializers.CharField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    error = serializers.CharField()


class SubjectEventSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    action = serializers.CharField()
    actor = serializers.CharField()
    agent = serializers.CharField(allow_null=True)
    summary = serializers.CharField()
    details = serializers.DictField()


class SubjectExportView(StaffAPIView):
    class OutputSerializer(serializers.Serializer):
        format = serializers.CharField()
        version = serializers.IntegerField()
        workspace = serializers.CharField()
        subject = serializers.CharField()
        exported_at = serializers.DateTimeField()
        exported_by = serializers.CharField()
        audit_event = serializers.IntegerField()
        counts = serializers.DictField(child=serializers.IntegerField())
        files = SubjectFileSerializer(many=True)
        versions = SubjectVersionSerializer(many=True)
        proposals = SubjectProposalSerializer(many=True)
        sessions = SubjectSessionSerializer(many=True)
        log_entries = SubjectLogEntrySerializer(many=True)
        changes = SubjectChangeSerializer(many=True)
        runs = SubjectRunSerializer(many=True)
        events = SubjectEventSerializer(many=True)

    @extend_schema(
        operation_id="export_subject",
        parameters=[
            OpenApiParameter("user_ref", USER_SCHEMA, OpenApiParameter.PATH,
                             description="The end user's reference (URL-encoded), 1–255 printable characters."),
            OpenApiParameter("workspace", {"type": "string", "maxLength": 64}, OpenApiParameter.QUERY,
                             description="Workspace slug; needed when you are an admin or auditor of several."),
        ],
        responses={200: OutputSerializer, **error_responses(400, 401, 403, 404, 429)},
        description="Everything held about end user U in one workspace, streamed as one JSON document: current "
        "files, every version, proposals, sessions, log entries, governance changes, consolidation runs and "
        "audit events. Admins and auditors only; every export is an audit event. A user with no data gets "
        "empty lists.",
    )
    def get(self, request: Request, user_ref: str) -> StreamingHttpResponse:
        export = services.export_subject(actor=request.user, user_ref=user_ref,
                                         workspace=request.query_params.get("workspace") or None)
        response = StreamingHttpResponse(export.chunks, content_type="application/json")
        response["Content-Disposition"] = f'attachment; filename="{export.filename}"'
        response["Cache-Control"] = "no-store"
        return response


class SubjectErasureView(StaffAPIView):
    class InputSerializer(serializers.Serializer):
        # Required by the service, which words the refusal like every entry point.
        reason = TextField(max_length=1000, required=False, allow_blank=True, default="")

    class OutputSerializer(serializers.Serializer):
        change = serializers.IntegerField()
        status = serializers.CharField()
        subject_hash = serializers.CharField()
        would_erase = serializers.DictField(
            child=serializers.IntegerField(),
            help_text="What the erasure would erase, counted when it was requested, per kind (files, versions, "
            "proposals, sessions, log_entries, runs, changes, events, …); counted again when it is approved.")

    @extend_schema(
        operation_id="request_subject_erasure",
        parameters=[
            OpenApiParameter("user_ref", USER_SCHEMA, OpenApiParameter.PATH,
                             description="The end user's reference (URL-encoded), 1–255 printable characters."),
            OpenApiParameter("workspace", {"type": "string", "maxLength": 64}, OpenApiParameter.QUERY,
                             description="Workspace slug; needed when you are an admin of several."),
        ],
        request=InputSerializer,
        responses={202: OutputSerializer, **error_responses(400, 401, 403, 404, 422, 429)},
        description="Four-eyes: records a pending erasure of end user U that a different admin approves with "
        "POST /api/v1/changes/ID/approve, which answers `erased` with the counts. Admins only. A reference that "
        "nothing in the workspace names is 422 `nothing_to_erase` (no change is recorded).",
    )
    def post(self, request: Request, user_ref: str) -> Response:
        data = parse_body(self.InputSerializer, request)
        change = services.request_erasure(actor=request.user, user_ref=user_ref, reason=data["reason"],
                                          workspace=request.query_params.get("workspace") or None)
        return Response({"change": change.pk, "status": change.status,
                         "subject_hash": change.payload["subject_hash"],
                         "would_erase": change.payload.get("counts", {})}, status=status.HTTP_202_ACCEPTED)
