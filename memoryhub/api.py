"""The agents' REST API (API.md, "Agents"). Each view parses input, calls one
domain function and shapes the answer; the key in the Authorization header
names the agent, so no path can reach another agent's data."""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.request import Request
from rest_framework.response import Response

from memoryhub import claude_memory, context, errors, idempotency, search, services, tool_schemas
from memoryhub.models import FileKind, LogRole, ToolSetting
from memoryhub.rest import AgentAPIView, error_responses

FILE_PARAM = OpenApiParameter(
    "file", str, OpenApiParameter.PATH, enum=FileKind.values, description="One of the five memory files."
)
# The bounds the services enforce, stated in the schema so generated clients
# know them (printable is checked by the server: 400 `invalid` otherwise).
USER_SCHEMA = {
    "type": "string", "minLength": 1, "maxLength": 255,
    # What str.isprintable() refuses that a regex can name: control, format
    # and separator characters (unassigned code points are refused too).
    "pattern": "^[^\\x00-\\x1f\\x7f-\\xa0\\u00ad\\u061c\\u1680\\u180e\\u2000-\\u200f"
               "\\u2028-\\u202f\\u205f-\\u206f\\u3000\\ufeff\\ufff9-\\ufffb]+$",
}
USER_PARAM = OpenApiParameter(
    "user", USER_SCHEMA, OpenApiParameter.QUERY,
    description="The end user's reference, 1–255 printable characters (USER.md and MEMORY.md only).",
)
_IF_MATCH = re.compile(r'^\s*(?:W/)?"?(\d{1,9})"?\s*$')


class TextField(serializers.CharField):
    """A CharField that takes only JSON strings: DRF would turn 5 into "5",
    and a number where text belongs is a client bug worth reporting."""

    default_error_messages = {"not_text": "Must be a string."}

    def to_internal_value(self, data: object) -> str:
        if not isinstance(data, str):
            self.fail("not_text")
        return super().to_internal_value(data)  # type: ignore[no-any-return]


def user_param(request: Request, *, required: bool = True) -> str | None:
    user_ref = request.query_params.get("user")
    if user_ref is None:
        if required:
            raise errors.Invalid("Pass the end user as ?user=<user_ref>.", field="user")
        return None
    # Present but empty is refused, as the schema says (minLength 1), not
    # quietly taken for "no user".
    return services.validate_user_ref(user_ref)


def parse_if_match(value: str | None) -> int | None:
    if value is None:
        return None
    match = _IF_MATCH.match(value)
    if match is None:
        raise errors.Invalid('If-Match must be the file version in quotes, like "3".', field="If-Match")
    return int(match.group(1))


def absent_nulls(fields: Mapping[str, serializers.Field[object, object, object, object]],
                 data: dict[str, object]) -> dict[str, object]:
    """`null` for an optional field means the field is absent: clients
    generated from a schema, and models in strict mode, send `"reason":
    null` for what they leave out. Only where null has no meaning of its own
    (a field that allows null keeps it), and a required field stays
    required. Applied to nested objects, lists of objects and maps."""
    cleaned: dict[str, object] = {}
    for key, value in data.items():
        field = fields.get(key)
        if field is None:
            cleaned[key] = value
        elif value is None:
            if field.required or field.allow_null:
                cleaned[key] = value
        else:
            cleaned[key] = _absent_nulls_in(field, value)
    return cleaned


def _absent_nulls_in(field: object, value: object) -> object:
    if isinstance(field, serializers.ListSerializer | serializers.ListField) and isinstance(value, list):
        return [_absent_nulls_in(field.child, item) for item in value]
    if isinstance(field, serializers.Serializer) and isinstance(value, dict):
        return absent_nulls(field.fields, value)
    if isinstance(field, serializers.DictField) and isinstance(value, dict):
        # A map's keys are optional entries ({"MEMORY.md": null} sets nothing).
        return {k: _absent_nulls_in(field.child, v) for k, v in value.items()
                if v is not None or field.child.allow_null}
    return value


def parse_input(serializer_class: type[serializers.Serializer], data: object) -> dict[str, object]:
    """A request body through its InputSerializer, the one door every API
    body passes (agent and staff routes alike)."""
    if not isinstance(data, dict):
        raise errors.Invalid("The request body must be a JSON object.")
    serializer = serializer_class(data=absent_nulls(serializer_class().fields, data))
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def parse_body(serializer_class: type[serializers.Serializer], request: Request) -> dict[str, Any]:
    """The request's JSON object through the view's InputSerializer. An
    empty body counts as {} (every field optional then); `null`, a list or
    a string is refused, as the schema says."""
    if not request.body:
        return parse_input(serializer_class, {})
    return parse_input(serializer_class, request.data)


class ContextView(AgentAPIView):
    class OutputSerializer(serializers.Serializer):
        agent = serializers.CharField()
        user = serializers.CharField()
        strategy = serializers.CharField()
        system_prompt = serializers.CharField()
        sections = serializers.ListField(child=serializers.DictField())
        tokens = serializers.IntegerField()
        token_counter = serializers.DictField()
        on_demand = serializers.ListField(child=serializers.CharField())
        snapshot = serializers.DictField()
        etag = serializers.CharField()
        session = serializers.IntegerField(required=False)

    @extend_schema(
        operation_id="get_context",
        parameters=[
            OpenApiParameter("user", USER_SCHEMA, OpenApiParameter.QUERY, required=True),
            OpenApiParameter("session", {"type": "integer", "minimum": 1}, OpenApiParameter.QUERY,
                             description="A session's frozen snapshot."),
        ],
        responses={200: OutputSerializer, 304: OpenApiResponse(description="Not modified"),
                   **error_responses(400, 401, 403, 404, 410, 429)},
    )
    def get(self, request: Request) -> Response:
        user_ref = user_param(request) or ""
        session_id = request.query_params.get("session")
        if session_id:
            payload = services.session_context(agent=self.agent, session_id=session_id, user_ref=user_ref)
        else:
            payload = context.cached_context(agent=self.agent, user_ref=user_ref)
        etag = f'"{payload["etag"]}"'
        if etag in [t.strip() for t in request.headers.get("If-None-Match", "").split(",")]:
            return Response(status=status.HTTP_304_NOT_MODIFIED, headers={"ETag": etag})
        return Response(payload, headers={"ETag": etag})


class MemorySearchView(AgentAPIView):
    class OutputSerializer(serializers.Serializer):
        results = serializers.ListField(child=serializers.DictField())

    @extend_schema(
        operation_id="search_memory",
        parameters=[
            OpenApiParameter("q", {"type": "string", "minLength": 1, "maxLength": 200}, OpenApiParameter.QUERY,
                             required=True),
            USER_PARAM,
            OpenApiParameter("limit", {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
                             OpenApiParameter.QUERY),
        ],
        responses={200: OutputSerializer, **error_responses(400, 401, 403, 429)},
    )
    def get(self, request: Request) -> Response:
        query = request.query_params.get("q", "")
        limit_raw = request.query_params.get("limit", "10")
        try:
            limit = int(limit_raw)
        except ValueError as exc:
            raise errors.Invalid("limit must be a whole number from 1 to 50.", field="limit") from exc
        hits = search.search(agent=self.agent, user_ref=user_param(request, required=False), query=query, limit=limit)
        return Response({"results": [hit.as_dict() for hit in hits]})


class MemoryFileView(AgentAPIView):
    class InputSerializer(serializers.Serializer):
        content = TextField(allow_blank=True, trim_whitespace=False, max_length=200_000)
        reason = TextField(allow_blank=True, required=False, default="", max_length=1000)

    class ReadSerializer(serializers.Serializer):
        file = serializers.CharField()
        scope = serializers.ChoiceField(choices=["agent", "agent_user"])
        exists = serializers.BooleanField()
        content = serializers.CharField()
        version = serializers.IntegerField()
        chars = serializers.IntegerField()
        limit = serializers.IntegerField()
        limit_kind = serializers.ChoiceField(choices=["hard", "soft"])
        updated_at = serializers.DateTimeField(allow_null=True)
        stale = serializers.BooleanField()
        blocked = serializers.ListField(child=serializers.CharField())
        withheld = serializers.BooleanField()
        as_data = serializers.CharField(
            help_text="`content` as a model should be handed it: inside <<MEMORY-DATA …>> markers when the agent "
            "spotlights (USER.md, MEMORY.md); `content` itself stays plain for read-modify-write."
        )

    class WrittenSerializer(serializers.Serializer):
        file = serializers.CharField()
        version = serializers.IntegerField()
        chars = serializers.IntegerField()
        warning = serializers.CharField(required=False)

    class PendingSerializer(serializers.Serializer):
        proposal = serializers.IntegerField()
        status = serializers.CharField()
        duplicate = serializers.BooleanField(
            required=False, help_text="Present (true) when the same change by this agent was already waiting: "
            "`proposal` names that one, and nothing new was filed.")

    @extend_schema(
        operation_id="read_memory",
        parameters=[FILE_PARAM, USER_PARAM],
        responses={200: ReadSerializer, **error_responses(400, 401, 403, 404, 429)},
    )
    def get(self, request: Request, file: str) -> Response:
        view = services.read_memory(agent=self.agent, kind=file, user_ref=user_param(request, required=False))
        served = context.serve_file(content=view.content, withheld=view.withheld)
        return Response(
            {
                "file": view.kind,
                "scope": view.scope,
                "exists": view.exists,
                "content": served.text,
                "version": view.version,
                "chars": view.chars,
                "limit": view.limit,
                "limit_kind": view.limit_kind,
                "updated_at": view.updated_at,
                "stale": view.stale,
                "blocked": list(served.blocked),
                "withheld": view.withheld,
                # The text as a model should be handed it: inside data
                # markers when the agent spotlights (USER.md, MEMORY.md).
                "as_data": context.as_data(agent=self.agent, kind=view.kind, text=served.text),
                "pending_review": [change.as_dict() for change in services.own_pending_changes(
                    agent=self.agent, kind=view.kind, user_ref=user_param(request, required=False))],
            }
        )

    @extend_schema(
        operation_id="write_memory",
        parameters=[
            FILE_PARAM,
            USER_PARAM,
            OpenApiParameter("If-Match", str, OpenApiParameter.HEADER, description='Expected version, e.g. "3".'),
            idempotency.PARAMETER,
        ],
        request=InputSerializer,
        responses={
            200: WrittenSerializer,
            202: PendingSerializer,
            **error_responses(400, 401, 403, 404, 412, 422, 429),
        },
    )
    @idempotency.idempotent
    def put(self, request: Request, file: str) -> Response:
        data = parse_input(self.InputSerializer, request.data)
        result = services.write_memory(
            agent=self.agent,
            kind=file,
            user_ref=user_param(request, required=False),
            content=data["content"],
            reason=data["reason"],
            expected_version=parse_if_match(request.headers.get("If-Match")),
        )
        return write_answer(file=file, result=result)


class ToolSerializer(serializers.Serializer):
    name = serializers.RegexField(r"^[A-Za-z0-9_-]{1,64}$")
    description = TextField(allow_blank=True, required=False, max_length=services.TOOL_DESCRIPTION_MAX)
    parameters = serializers.DictField(required=False, help_text='A JSON Schema with "type": "object".')


class ToolsView(AgentAPIView):
    class InputSerializer(serializers.Serializer):
        tools: serializers.ListSerializer[Any] = serializers.ListSerializer(
            child=ToolSerializer(), max_length=services.MAX_TOOLS
        )

    class OutputSerializer(serializers.Serializer):
        tools = ToolSerializer(many=True)

    @staticmethod
    def shape(tools: list[ToolSetting]) -> dict[str, object]:
        return {"tools": [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in tools]}

    @extend_schema(operation_id="list_tools", responses={200: OutputSerializer, **error_responses(401, 403, 429)})
    def get(self, request: Request) -> Response:
        return Response(self.shape(list(ToolSetting.objects.filter(agent=self.agent))))

    @extend_schema(
        operation_id="replace_tools",
        request=InputSerializer,
        responses={200: OutputSerializer, **error_responses(400, 401, 403, 422, 429)},
    )
    def put(self, request: Request) -> Response:
        if not isinstance(request.data, dict) or "tools" not in request.data:
            raise errors.Invalid("Send {\"tools\": [{name, description, parameters}, …]}.", field="tools")
        # The registry's own validation (services.validate_tools) reads the
        # body; nulls for optional tool fields are dropped first, as for every body.
        data = absent_nulls(self.InputSerializer().fields, request.data)
        return Response(self.shape(services.replace_tools(agent=self.agent, tools=data["tools"], actor=self.agent)))


class SessionsView(AgentAPIView):
    class InputSerializer(serializers.Serializer):
        user = TextField(max_length=255, trim_whitespace=False)
        external_id = TextField(max_length=255, required=False, default="", allow_blank=True, trim_whitespace=False)

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        user = serializers.CharField()
        started_at = serializers.DateTimeField()
        snapshot = serializers.DictField()

    @extend_schema(
        operation_id="start_session",
        parameters=[idempotency.PARAMETER],
        request=InputSerializer,
        responses={201: OutputSerializer, **error_responses(400, 401, 403, 409, 422, 429)},
    )
    @idempotency.idempotent
    def post(self, request: Request) -> Response:
        data = parse_input(self.InputSerializer, request.data)
        session = services.start_session(agent=self.agent, user_ref=data["user"], external_id=data["external_id"])
        return Response(
            {"id": session.pk, "user": session.user_ref, "started_at": session.started_at,
             "snapshot": session.snapshot},
            status=status.HTTP_201_CREATED,
        )


class SessionLogView(AgentAPIView):
    class EntrySerializer(serializers.Serializer):
        role = serializers.ChoiceField(choices=LogRole.values)
        content = TextField(trim_whitespace=False, max_length=services.MAX_LOG_ENTRY_CHARS)

    class InputSerializer(serializers.Serializer):
        entries = serializers.ListField(child=serializers.DictField())

    class OutputSerializer(serializers.Serializer):
        appended = serializers.IntegerField()
        last_id = serializers.IntegerField()
        redacted = serializers.IntegerField(help_text="Secrets replaced by [REDACTED:<rule>] before storing.")
        redacted_rules = serializers.ListField(child=serializers.CharField())

    @extend_schema(
        operation_id="append_session_log",
        request=inline_serializer(
            "LogInput",
            fields={
                "entries": serializers.ListSerializer(
                    child=EntrySerializer(), min_length=1, max_length=services.MAX_LOG_BATCH
                )
            },
        ),
        parameters=[idempotency.PARAMETER],
        responses={201: OutputSerializer, **error_responses(400, 401, 403, 404, 409, 410, 422, 429)},
    )
    @idempotency.idempotent
    def post(self, request: Request, session_id: int) -> Response:
        session = services.get_session(agent=self.agent, session_id=session_id)
        if not isinstance(request.data, dict):
            raise errors.Invalid("The request body must be a JSON object with entries.")
        rows = services.append_log(session=session, entries=request.data.get("entries"))  # type: ignore[arg-type]
        return Response({"appended": len(rows), "last_id": rows[-1].pk, "redacted": rows.redacted,
                         "redacted_rules": rows.redacted_rules}, status=status.HTTP_201_CREATED)


class SessionEndView(AgentAPIView):
    class InputSerializer(serializers.Serializer):
        # The length is the service's rule (422 limit_exceeded), as for memory_note.
        note = TextField(required=False, trim_whitespace=False,
                         help_text="A final note (as memory_note) logged before the session ends.")

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        ended_at = serializers.DateTimeField()

    @extend_schema(
        operation_id="end_session", request=InputSerializer,
        responses={200: OutputSerializer, **error_responses(400, 401, 403, 404, 410, 422, 429)},
    )
    def post(self, request: Request, session_id: int) -> Response:
        session = services.get_session(agent=self.agent, session_id=session_id)
        data = parse_body(self.InputSerializer, request)
        session = services.end_session_with_note(session=session, note=data.get("note"))
        return Response({"id": session.pk, "ended_at": session.ended_at})


class MemorySearchEntryView(AgentAPIView):
    """A log entry whole, as a search hit's `entry` names it: the hit's
    snippet is 200 characters, the entry can be a page. Scoped to the calling
    agent and the user given; anyone else's entry is a 404."""

    class OutputSerializer(serializers.Serializer):
        entry = serializers.IntegerField()
        session = serializers.IntegerField()
        role = serializers.ChoiceField(choices=LogRole.values)
        content = serializers.CharField(help_text="Re-scanned: a part a scanner rule catches reads [BLOCKED: rule].")
        created_at = serializers.DateTimeField()
        blocked = serializers.ListField(child=serializers.CharField())

    @extend_schema(
        operation_id="read_search_entry",
        parameters=[
            OpenApiParameter("entry_id", {"type": "integer", "minimum": 1}, OpenApiParameter.PATH,
                             description="A search hit's `entry`."),
            OpenApiParameter("user", USER_SCHEMA, OpenApiParameter.QUERY, required=True,
                             description="The end user whose session logged the entry."),
        ],
        responses={200: OutputSerializer, **error_responses(400, 401, 403, 404, 429)},
    )
    def get(self, request: Request, entry_id: int) -> Response:
        entry = search.read_entry(agent=self.agent, user_ref=user_param(request) or "", entry_id=entry_id)
        return Response(entry.as_dict())


# --- v1.1: entry operations and tool schemas ---------------------------------------------------------------


def write_answer(*, file: str, result: services.WriteResult) -> Response:
    """A write's answer, whatever wrote it: 200 applied, 202 pending review."""
    if result.proposal is not None:
        pending: dict[str, object] = {"proposal": result.proposal.pk, "status": "pending"}
        if result.duplicate:
            pending["duplicate"] = True
        return Response(pending, status=status.HTTP_202_ACCEPTED)
    body: dict[str, object] = {"file": file, "version": result.version, "chars": result.chars}
    if result.warning:
        body["warning"] = result.warning
    return Response(body, headers={"ETag": f'"{result.version}"'})


def entry_text(help_text: str) -> TextField:
    return TextField(max_length=services.ENTRY_MAX, trim_whitespace=False, help_text=help_text)

_ENTRY_PARAMS = [
    FILE_PARAM,
    USER_PARAM,
    OpenApiParameter("If-Match", str, OpenApiParameter.HEADER, description='Expected version, e.g. "3".'),
    idempotency.PARAMETER,
]
_ENTRY_RESPONSES = {
    200: MemoryFileView.WrittenSerializer,
    202: MemoryFileView.PendingSerializer,
    **error_responses(400, 401, 403, 404, 409, 412, 422, 429),
}


class MemoryEntriesView(AgentAPIView):
    """One entry of a memory file: a list item, a heading or a paragraph.
    The same rules as a whole-file PUT (limits, scanner, write policy,
    If-Match, audit); 404 `not_found` when no entry contains `old_text`,
    409 `ambiguous` when several different ones do, 409 `withheld` while a
    reviewer holds the file back."""

    class AddSerializer(serializers.Serializer):
        text = entry_text("The new entry: one list item, heading or paragraph.")
        reason = TextField(allow_blank=True, required=False, default="", max_length=1000)

    class ReplaceSerializer(serializers.Serializer):
        old_text = entry_text("Part of the entry to replace, quoted exactly.")
        new_text = entry_text("The whole new entry.")
        reason = TextField(allow_blank=True, required=False, default="", max_length=1000)

    class RemoveSerializer(serializers.Serializer):
        old_text = entry_text("Part of the entry to remove, quoted exactly.")
        reason = TextField(allow_blank=True, required=False, default="", max_length=1000)

    def target(self, request: Request, file: str) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "kind": file,
            "user_ref": user_param(request, required=False),
            "expected_version": parse_if_match(request.headers.get("If-Match")),
        }

    @extend_schema(operation_id="add_memory_entry", parameters=_ENTRY_PARAMS, request=AddSerializer,
                   responses=_ENTRY_RESPONSES)
    @idempotency.idempotent
    def post(self, request: Request, file: str) -> Response:
        data = parse_body(self.AddSerializer, request)
        result = services.add_entry(**self.target(request, file), text=data["text"], reason=data["reason"])
        return write_answer(file=file, result=result)

    @extend_schema(operation_id="replace_memory_entry", parameters=_ENTRY_PARAMS, request=ReplaceSerializer,
                   responses=_ENTRY_RESPONSES)
    @idempotency.idempotent
    def patch(self, request: Request, file: str) -> Response:
        data = parse_body(self.ReplaceSerializer, request)
        result = services.replace_entry(**self.target(request, file), old_text=data["old_text"],
                                        new_text=data["new_text"], reason=data["reason"])
        return write_answer(file=file, result=result)

    @extend_schema(operation_id="remove_memory_entry", parameters=_ENTRY_PARAMS, request=RemoveSerializer,
                   responses=_ENTRY_RESPONSES)
    @idempotency.idempotent
    def delete(self, request: Request, file: str) -> Response:
        data = parse_body(self.RemoveSerializer, request)
        result = services.remove_entry(**self.target(request, file), old_text=data["old_text"],
                                       reason=data["reason"])
        return write_answer(file=file, result=result)


# --- notes: saved before compaction (services.notes) -------------------------------------------------------


class NoteOutputSerializer(serializers.Serializer):
    entry = serializers.IntegerField()
    session = serializers.IntegerField()
    text = serializers.CharField(help_text="Re-scanned: a part a scanner rule catches reads [BLOCKED: rule].")
    created_at = serializers.DateTimeField()
    blocked = serializers.ListField(child=serializers.CharField())


class MemoryNotesView(AgentAPIView):
    """The `memory_note` tool over REST: a short note appended to a session
    log of this agent and user (role `note`, scanned like any log entry),
    and the pair's notes of the last two days. Never injected into a context."""

    class InputSerializer(serializers.Serializer):
        user = TextField(max_length=255, trim_whitespace=False)
        text = TextField(trim_whitespace=False, max_length=services.MAX_LOG_ENTRY_CHARS,
                         help_text=f"At most {tool_schemas.NOTE_MAX:,} characters (422 limit_exceeded above).")
        session = serializers.IntegerField(required=False, min_value=1, max_value=2**63 - 1,
                                           help_text="Default: the pair's most recent open session.")

    class SavedSerializer(serializers.Serializer):
        entry = serializers.IntegerField()
        session = serializers.IntegerField()
        created_at = serializers.DateTimeField()
        redacted = serializers.IntegerField()
        redacted_rules = serializers.ListField(child=serializers.CharField())

    class ListSerializer(serializers.Serializer):
        days = serializers.IntegerField()
        notes = NoteOutputSerializer(many=True)

    @extend_schema(
        operation_id="add_memory_note", request=InputSerializer, parameters=[idempotency.PARAMETER],
        responses={201: SavedSerializer, **error_responses(400, 401, 403, 404, 409, 410, 422, 429)},
    )
    @idempotency.idempotent
    def post(self, request: Request) -> Response:
        data = parse_body(self.InputSerializer, request)
        saved = services.add_note(agent=self.agent, user_ref=data["user"], text=data["text"],
                                  session_id=data.get("session"))
        return Response({"entry": saved.entry.pk, "session": saved.session.pk, "created_at": saved.entry.created_at,
                         "redacted": saved.redacted, "redacted_rules": saved.redacted_rules},
                        status=status.HTTP_201_CREATED)

    @extend_schema(
        operation_id="list_memory_notes",
        parameters=[OpenApiParameter("user", USER_SCHEMA, OpenApiParameter.QUERY, required=True)],
        responses={200: ListSerializer, **error_responses(400, 401, 403, 429)},
    )
    def get(self, request: Request) -> Response:
        notes = services.recent_notes(agent=self.agent, user_ref=user_param(request))
        return Response({"days": services.NOTES_DAYS, "notes": [note.as_dict() for note in notes]})


class FormatIsAParameter(DefaultContentNegotiation):
    """DRF reads `?format=` as a renderer name and answers 404 for any it does
    not know; on the tool-schemas route it names the schema dialect (API.md)."""

    settings = SimpleNamespace(URL_FORMAT_OVERRIDE=None)  # type: ignore[assignment]


class ToolSchemasView(AgentAPIView):
    """The memory tools as ready function-calling definitions, from the same
    definitions the MCP server lists (memoryhub.tool_schemas)."""

    content_negotiation_class = FormatIsAParameter

    class OutputSerializer(serializers.Serializer):
        format = serializers.ChoiceField(choices=list(tool_schemas.FORMATS))
        tools = serializers.ListField(child=serializers.DictField())
        strict = serializers.BooleanField(required=False, help_text="Present (true) for ?strict=true.")

    @extend_schema(
        operation_id="memory_tool_schemas",
        parameters=[
            OpenApiParameter("format", str, OpenApiParameter.QUERY, enum=list(tool_schemas.FORMATS),
                             default="openai"),
            OpenApiParameter("strict", str, OpenApiParameter.QUERY, enum=["true", "false"], default="false",
                             description="true: for OpenAI structured outputs / Anthropic strict tool use "
                             "(`strict: true`, every property required, optional ones nullable); openai and "
                             "anthropic only."),
        ],
        responses={200: OutputSerializer, **error_responses(400, 401, 403, 429)},
    )
    def get(self, request: Request) -> Response:
        fmt = request.query_params.get("format", "openai")
        strict = strict_param(request)
        body: dict[str, object] = {"format": fmt, "tools": tool_schemas.render(fmt, strict=strict)}
        if strict:
            body["strict"] = True
        return Response(body)


# --- Claude's memory tool (memory_20250818) ---------------------------------------------------------------


class ClaudeMemoryView(AgentAPIView):
    """One command of Anthropic's memory tool on `/memories/<FILE>`
    (memoryhub.claude_memory): the body is the tool call's `input` as the
    model sent it. `result` is the text to hand back as the tool result; an
    error's `detail` is the text to hand back with `is_error: true`, and
    lists the files that exist. Writes follow every rule of the other
    writes: 200 applied, 202 pending review, 412 on a stale If-Match."""

    class InputSerializer(serializers.Serializer):
        command = serializers.ChoiceField(choices=list(claude_memory.COMMANDS))
        path = TextField(required=False, max_length=1000, trim_whitespace=False)
        view_range = serializers.ListField(child=serializers.IntegerField(), required=False, min_length=2,
                                           max_length=2, help_text="view: [first, last] line (last -1: the end).")
        file_text = TextField(required=False, allow_blank=True, trim_whitespace=False, max_length=200_000)
        old_str = TextField(required=False, allow_blank=True, trim_whitespace=False,
                            max_length=services.ENTRY_MAX)
        new_str = TextField(required=False, allow_blank=True, trim_whitespace=False, max_length=200_000)
        insert_line = serializers.IntegerField(required=False, min_value=-1_000_000, max_value=1_000_000)
        insert_text = TextField(required=False, allow_blank=True, trim_whitespace=False, max_length=200_000)
        old_path = TextField(required=False, max_length=1000, trim_whitespace=False)
        new_path = TextField(required=False, max_length=1000, trim_whitespace=False)

    class ResultSerializer(serializers.Serializer):
        command = serializers.CharField()
        result = serializers.CharField(help_text="The tool result's text, for the model.")
        file = serializers.CharField(required=False)
        version = serializers.IntegerField(required=False)
        chars = serializers.IntegerField(required=False)
        warning = serializers.CharField(required=False)
        files = serializers.ListField(child=serializers.CharField(), required=False)

    class PendingSerializer(serializers.Serializer):
        command = serializers.CharField()
        result = serializers.CharField()
        proposal = serializers.IntegerField()
        status = serializers.CharField()
        duplicate = serializers.BooleanField(required=False)

    @extend_schema(
        operation_id="claude_memory_command",
        parameters=[
            USER_PARAM,
            OpenApiParameter("If-Match", str, OpenApiParameter.HEADER,
                             description='Expected version of the file a write changes, e.g. "3".'),
            idempotency.PARAMETER,
        ],
        request=InputSerializer,
        responses={200: ResultSerializer, 202: PendingSerializer,
                   **error_responses(400, 401, 403, 404, 409, 412, 422, 429)},
    )
    @idempotency.idempotent
    def post(self, request: Request) -> Response:
        data = parse_body(self.InputSerializer, request)
        answer = claude_memory.run(agent=self.agent, user_ref=user_param(request, required=False), command=data,
                                   expected_version=parse_if_match(request.headers.get("If-Match")))
        body: dict[str, object] = {"command": data["command"], "result": answer.result}
        written = answer.write
        if written is not None and written.proposal is not None:
            body.update(proposal=written.proposal.pk, status="pending")
            if written.duplicate:
                body["duplicate"] = True
            return Response(body, status=status.HTTP_202_ACCEPTED)
        if answer.file is not None:
            body.update(file=answer.file, version=answer.version)
        if written is not None:
            body["chars"] = written.chars
            if written.warning:
                body["warning"] = written.warning
        if answer.files:
            body["files"] = answer.files
        return Response(body, headers={"ETag": f'"{answer.version}"'} if answer.version is not None else {})


# --- the agent's own version history ---------------------------------------------------------------------


class MemoryVersionsView(AgentAPIView):
    """When and how the agent's own file changed, oldest first: numbers,
    times, sources and reasons, not contents. An old version can hold text
    a reviewer took out of service (a withheld or rolled-back version), and
    only the current one is served (GET /api/v1/memory/FILE)."""

    class VersionSerializer(serializers.Serializer):
        version = serializers.IntegerField()
        created_at = serializers.DateTimeField()
        source = serializers.CharField()  # type: ignore[assignment]  # the API's field name, not Field.source
        reason = serializers.CharField()
        chars = serializers.IntegerField()
        current = serializers.BooleanField()

    class OutputSerializer(serializers.Serializer):
        file = serializers.CharField()
        versions = serializers.ListField(child=serializers.DictField())

    @extend_schema(
        operation_id="list_memory_versions",
        parameters=[FILE_PARAM, USER_PARAM],
        responses={200: OutputSerializer, **error_responses(400, 401, 403, 404, 429)},
    )
    def get(self, request: Request, file: str) -> Response:
        rows = services.file_versions(agent=self.agent, kind=file, user_ref=user_param(request, required=False))
        latest = rows[-1].version if rows else 0
        return Response({"file": file, "versions": [
            {"version": row.version, "created_at": row.history_date, "source": row.source,
             "reason": row.history_change_reason or "", "chars": len(row.content or ""),
             "current": row.version == latest}
            for row in rows
        ]})


def strict_param(request: Request) -> bool:
    value = request.query_params.get("strict", "false")
    if value not in ("true", "false"):
        raise errors.Invalid(f"strict must be true or false, not {value[:40]!r}.", field="strict")
    return value == "true"
