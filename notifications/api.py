"""Staff REST API for webhooks (API.md, "Added in v1.1"): admin only. Thin
views: parse, call one service, shape the answer. The secret is never part
of an answer, except a generated one, once, in the answer that created it."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from memoryhub.api import TextField, parse_body
from memoryhub.rest import StaffAPIView, error_responses
from notifications import services
from notifications.models import EVENTS, Webhook


def webhook_detail(hook: Webhook) -> dict[str, object]:
    return {
        "id": hook.pk,
        "workspace": hook.workspace.slug,
        "url": hook.url,
        "events": hook.events,
        "created_at": hook.created_at,
        "created_by": hook.created_by.get_username() if hook.created_by else None,
    }


class WebhookSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    workspace = serializers.CharField()
    url = serializers.CharField()
    events = serializers.ListField(child=serializers.ChoiceField(choices=list(EVENTS)))
    created_at = serializers.DateTimeField()
    created_by = serializers.CharField(allow_null=True)


class WebhookListView(StaffAPIView):
    class InputSerializer(serializers.Serializer):
        url = TextField(max_length=services.URL_MAX)
        events = serializers.ListField(child=serializers.ChoiceField(choices=list(EVENTS)), min_length=1,
                                       max_length=len(EVENTS))
        secret = TextField(required=False, allow_blank=True, max_length=services.SECRET_MAX,
                           help_text="Signs every delivery (HMAC-SHA256). Left out, one is generated and returned "
                           "once in this answer.")
        workspace = TextField(required=False, max_length=64,
                              help_text="Workspace slug; needed when you are an admin in several.")

    class CreatedSerializer(WebhookSerializer):
        secret = serializers.CharField(required=False, help_text="Only when generated; shown this once.")

    @extend_schema(operation_id="list_webhooks",
                   responses={200: WebhookSerializer(many=True), **error_responses(401, 403, 429)},
                   description="Admin only: the webhooks of the workspaces where you are an admin. The secret is "
                   "never returned.")
    def get(self, request: Request) -> Response:
        services.admin_workspace_ids(request.user)
        return Response([webhook_detail(h) for h in services.visible_webhooks(request.user)[:500]])

    @extend_schema(operation_id="create_webhook", request=InputSerializer,
                   responses={201: CreatedSerializer, **error_responses(400, 401, 403, 404, 429)},
                   description="Admin only. Deliveries are POSTs signed with `X-MemoryHub-Signature: "
                   "sha256=<hex HMAC-SHA256 of the body>` and name the event in `X-MemoryHub-Event`.")
    def post(self, request: Request) -> Response:
        data = parse_body(self.InputSerializer, request)
        workspace = services.admin_workspace(actor=request.user, slug=data.get("workspace"))
        hook, generated = services.create_webhook(actor=request.user, workspace=workspace, url=data["url"],
                                                  events=data["events"], secret=data.get("secret"))
        answer = webhook_detail(hook)
        if generated:
            answer["secret"] = generated
        return Response(answer, status=status.HTTP_201_CREATED)


class WebhookDetailView(StaffAPIView):
    @extend_schema(operation_id="delete_webhook", request=None,
                   responses={204: None, **error_responses(401, 403, 404, 429)},
                   description="Admin only. Nothing more is sent to it; its delivery log is kept.")
    def delete(self, request: Request, webhook_id: int) -> Response:
        services.delete_webhook(actor=request.user, webhook_id=webhook_id)
        return Response(status=status.HTTP_204_NO_CONTENT)
