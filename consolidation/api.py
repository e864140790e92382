"""The staff REST API for consolidation runs (API.md, "Staff")."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from consolidation import services
from consolidation.models import ConsolidationPair, ConsolidationRun, Failure, RunStatus, Trigger
from memoryhub import idempotency
from memoryhub import services as core
from memoryhub.api import TextField, parse_body
from memoryhub.rest import StaffAPIView, error_responses


def pair_detail(pair: ConsolidationPair | None) -> dict[str, object]:
    if pair is None:
        return {"needs_attention": False, "reason": "", "code": "", "clears_when": "", "since": None,
                "next_attempt_at": None, "transient_failures": 0}
    return {
        "needs_attention": pair.needs_attention,
        "reason": pair.attention_reason if pair.needs_attention else "",
        "code": pair.attention_code if pair.needs_attention else "",
        "clears_when": pair.attention_clears_when if pair.needs_attention else "",
        "since": pair.attention_since if pair.needs_attention else None,
        "next_attempt_at": pair.next_attempt_at,
        "transient_failures": pair.transient_failures,
    }


def run_detail(run: ConsolidationRun) -> dict[str, object]:
    return {
        "id": run.pk,
        "agent": run.agent.slug,
        "user": run.user_ref,
        "status": run.status,
        "trigger": run.trigger,
        "backend": run.backend,
        "model": run.model,
        "proposals": sorted(p.pk for p in run.proposals.all()),
        "tokens_in": run.tokens_in,
        "tokens_out": run.tokens_out,
        "cost_usd": str(run.cost_usd),
        "error": run.error,
        "failure": run.failure,
        "retry_at": run.retry_at,
        "pair": pair_detail(services.pair_state(agent=run.agent, user_ref=run.user_ref)),
        "attempts": run.attempts,
        "high_water_mark": run.high_water_mark,
        "counts": run.counts,
        "created_at": run.created_at,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
    }


class PairStateSerializer(serializers.Serializer):
    needs_attention = serializers.BooleanField()
    reason = serializers.CharField()
    code = serializers.CharField()
    clears_when = serializers.CharField()
    since = serializers.DateTimeField(allow_null=True)
    next_attempt_at = serializers.DateTimeField(allow_null=True)
    transient_failures = serializers.IntegerField()


class RunDetailSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    agent = serializers.CharField()
    user = serializers.CharField()
    status = serializers.ChoiceField(choices=RunStatus.values)
    trigger = serializers.ChoiceField(choices=Trigger.values)
    backend = serializers.CharField()
    model = serializers.CharField()
    proposals = serializers.ListField(child=serializers.IntegerField())
    tokens_in = serializers.IntegerField()
    tokens_out = serializers.IntegerField()
    cost_usd = serializers.DecimalField(max_digits=12, decimal_places=6, coerce_to_string=True)
    error = serializers.CharField()
    failure = serializers.ChoiceField(choices=Failure.values, allow_blank=True)
    retry_at = serializers.DateTimeField(allow_null=True)
    pair = PairStateSerializer()
    attempts = serializers.IntegerField()
    high_water_mark = serializers.IntegerField()
    counts = serializers.DictField()
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class ConsolidateView(StaffAPIView):
    class InputSerializer(serializers.Serializer):
        user = TextField(max_length=255, trim_whitespace=False)

    class OutputSerializer(serializers.Serializer):
        run = serializers.IntegerField()
        status = serializers.ChoiceField(choices=RunStatus.values)

    @extend_schema(
        operation_id="consolidate_agent",
        parameters=[idempotency.PARAMETER],
        request=InputSerializer,
        responses={202: OutputSerializer, **error_responses(400, 401, 403, 404, 409, 412, 422, 429)},
        description="Queue a consolidation run for one user of the agent. While a run for that pair is queued or "
        "running, the answer names that run instead of starting a second one.",
    )
    @idempotency.idempotent
    def post(self, request: Request, slug: str) -> Response:
        agent = core.get_agent_for_user(request.user, slug)
        data = parse_body(self.InputSerializer, request)
        run, _ = services.trigger_run(agent=agent, user_ref=data["user"], user=request.user)
        return Response({"run": run.pk, "status": run.status}, status=status.HTTP_202_ACCEPTED)


class RunDetailView(StaffAPIView):
    @extend_schema(
        operation_id="get_consolidation_run",
        responses={200: RunDetailSerializer, **error_responses(401, 403, 404, 429)},
    )
    def get(self, request: Request, run_id: int) -> Response:
        return Response(run_detail(services.get_run_for_user(request.user, run_id)))
