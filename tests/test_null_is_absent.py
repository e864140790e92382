"""`null` means absent for every optional field of every REST body, agent
and staff routes alike (memoryhub.api.absent_nulls, applied where every
body is parsed).

The cases are generated from the live OpenAPI schema: every operation with
a JSON body, every optional property (and the optional properties of the
objects inside a list), so a new route or field is covered without editing
this file. Each is sent twice on the same state, once without the field and
once with it set to null, and must get the same answer (status, and the
error body when refused). A route the table below does not know fails the
test: name who calls it and a body that works.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.db import transaction
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from memoryhub import services
from memoryhub.models import Role, Source, WritePolicy
from notifications import services as notify
from tests.api_helpers import agent_client, staff_client
from tests.factories import AgentFactory, staff

pytestmark = pytest.mark.django_db

SCHEMA = SchemaGenerator().get_schema(request=None, public=True)
COMPONENTS = SCHEMA["components"]["schemas"]


def resolved(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = COMPONENTS[schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def body_schema(operation: dict[str, Any]) -> dict[str, Any] | None:
    content = operation.get("requestBody", {}).get("content", {})
    schema = content.get("application/json", {}).get("schema")
    return resolved(schema) if schema else None


def operations() -> list[tuple[str, str, dict[str, Any]]]:
    found = []
    for path, methods in SCHEMA["paths"].items():
        for method, operation in methods.items():
            schema = body_schema(operation)
            if schema is not None and schema.get("properties"):
                found.append((method.upper(), path, schema))
    return found


# DELETE bodies are not part of OpenAPI 3.0's request bodies; the one route
# that takes one is listed by hand with its serializer's optional fields.
EXTRA = [("DELETE", "/api/v1/memory/{file}/entries",
          {"type": "object", "properties": {"old_text": {"type": "string"}, "reason": {"type": "string"}},
           "required": ["old_text"]})]


@dataclass
class World:
    agent: Any
    users: dict[str, Any]
    ids: dict[str, int]


@pytest.fixture
def world(settings: Any) -> World:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    agent = AgentFactory(slug="nulls", write_policy=WritePolicy.DIRECT)
    workspace = agent.workspace
    users = {role: staff(workspace, role) for role in (Role.REVIEWER, Role.ADMIN, Role.AUDITOR)}
    users["admin2"] = staff(workspace, Role.ADMIN)
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content="- likes tea\n- lives in Oslo\n")
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="u1", content="- likes tea\n- lives in Bergen\n")
    services.write_memory(agent=agent, kind="USER.md", user_ref="u1", content="- speaks Norwegian\n")
    services.withhold_file(agent=agent, kind="USER.md", user_ref="u1", actor=users[Role.REVIEWER], reason="check")
    proposal = services.propose_change(agent=agent, kind="MEMORY.md", user_ref="u1", source=Source.ADMIN,
                                       content="- likes green tea\n- lives in Bergen\n", reason="tea",
                                       author_user=users[Role.ADMIN])
    Agent = type(agent)
    Agent.objects.filter(pk=agent.pk).update(write_policy=WritePolicy.REVIEW)
    agent.refresh_from_db()
    change = services.update_agent(agent=agent, settings={"write_policy": "direct"}, actor=users[Role.ADMIN]).change
    assert change is not None
    session = services.start_session(agent=agent, user_ref="u1")
    hook, _ = notify.create_webhook(actor=users[Role.ADMIN], workspace=workspace, url="https://hooks.example.com/n",
                                    events=["proposal.created"], secret="nulls-webhook-secret-0123")
    return World(agent=agent, users=users, ids={"proposal": proposal.pk, "change": change.pk, "session": session.pk,
                                                "webhook": hook.pk})


@dataclass(frozen=True)
class Route:
    who: str  # "agent" or a role
    url: Callable[[World], str]
    body: Callable[[World], dict[str, Any]]


def _agent_file(what: str) -> Callable[[World], str]:
    return lambda w: f"/api/v1/agents/{w.agent.slug}/files/MEMORY.md/{what}?user=u1"


ROUTES: dict[tuple[str, str], Route] = {
    ("PATCH", "/api/v1/agents/{slug}"): Route(Role.ADMIN, lambda w: f"/api/v1/agents/{w.agent.slug}",
                                              lambda w: {"strategy": "full", "reason": "nulls"}),
    ("POST", "/api/v1/agents/{slug}/consolidate"): Route(
        Role.REVIEWER, lambda w: f"/api/v1/agents/{w.agent.slug}/consolidate", lambda w: {"user": "u1"}),
    ("POST", "/api/v1/agents/{slug}/files/{file}/release"): Route(
        Role.REVIEWER, lambda w: f"/api/v1/agents/{w.agent.slug}/files/USER.md/release?user=u1",
        lambda w: {"reason": "checked"}),
    ("POST", "/api/v1/agents/{slug}/files/{file}/rollback"): Route(
        Role.REVIEWER, _agent_file("rollback"), lambda w: {"version": 1, "reason": "undo"}),
    ("POST", "/api/v1/agents/{slug}/files/{file}/withhold"): Route(
        Role.REVIEWER, _agent_file("withhold"), lambda w: {"reason": "poison"}),
    ("POST", "/api/v1/changes/{change_id}/approve"): Route(
        "admin2", lambda w: f"/api/v1/changes/{w.ids['change']}/approve", lambda w: {"comment": "fine"}),
    ("POST", "/api/v1/changes/{change_id}/reject"): Route(
        "admin2", lambda w: f"/api/v1/changes/{w.ids['change']}/reject", lambda w: {"comment": "no"}),
    ("POST", "/api/v1/changes/{change_id}/withdraw"): Route(
        Role.ADMIN, lambda w: f"/api/v1/changes/{w.ids['change']}/withdraw", lambda w: {"comment": "later"}),
    ("PUT", "/api/v1/memory/{file}"): Route(
        "agent", lambda w: "/api/v1/memory/MEMORY.md?user=u1", lambda w: {"content": "- likes coffee\n",
                                                                           "reason": "said so"}),
    ("POST", "/api/v1/memory/claude-memory"): Route(
        "agent", lambda w: "/api/v1/memory/claude-memory?user=u1",
        lambda w: {"command": "insert", "path": "/memories/MEMORY.md", "insert_line": 0, "insert_text": "- Rides."}),
    ("POST", "/api/v1/memory/{file}/entries"): Route(
        "agent", lambda w: "/api/v1/memory/MEMORY.md/entries?user=u1", lambda w: {"text": "Rides a bike.",
                                                                                    "reason": "said so"}),
    ("PATCH", "/api/v1/memory/{file}/entries"): Route(
        "agent", lambda w: "/api/v1/memory/MEMORY.md/entries?user=u1",
        lambda w: {"old_text": "Bergen", "new_text": "Lives in Tromsø.", "reason": "moved"}),
    ("DELETE", "/api/v1/memory/{file}/entries"): Route(
        "agent", lambda w: "/api/v1/memory/MEMORY.md/entries?user=u1", lambda w: {"old_text": "Bergen",
                                                                                    "reason": "moved away"}),
    ("POST", "/api/v1/proposals/{proposal_id}/approve"): Route(
        Role.REVIEWER, lambda w: f"/api/v1/proposals/{w.ids['proposal']}/approve",
        lambda w: {"comment": "ok", "reason_code": "accurate"}),
    ("POST", "/api/v1/proposals/{proposal_id}/reject"): Route(
        Role.REVIEWER, lambda w: f"/api/v1/proposals/{w.ids['proposal']}/reject",
        lambda w: {"comment": "no", "reason_code": "outdated"}),
    ("POST", "/api/v1/proposals/{proposal_id}/withdraw"): Route(
        Role.ADMIN, lambda w: f"/api/v1/proposals/{w.ids['proposal']}/withdraw", lambda w: {"comment": "mine"}),
    ("POST", "/api/v1/proposals/bulk"): Route(
        Role.REVIEWER, lambda w: "/api/v1/proposals/bulk",
        lambda w: {"ids": [w.ids["proposal"]], "action": "approve", "reason_code": "accurate", "comment": "ok"}),
    ("POST", "/api/v1/sessions"): Route("agent", lambda w: "/api/v1/sessions",
                                        lambda w: {"user": "u2", "external_id": "chat-7"}),
    ("POST", "/api/v1/sessions/{session_id}/log"): Route(
        "agent", lambda w: f"/api/v1/sessions/{w.ids['session']}/log",
        lambda w: {"entries": [{"role": "user", "content": "Hello."}]}),
    ("POST", "/api/v1/sessions/{session_id}/end"): Route(
        "agent", lambda w: f"/api/v1/sessions/{w.ids['session']}/end", lambda w: {"note": "Said goodbye."}),
    ("POST", "/api/v1/memory/notes"): Route(
        "agent", lambda w: "/api/v1/memory/notes",
        lambda w: {"user": "u1", "text": "Likes tea, noted.", "session": w.ids["session"]}),
    ("POST", "/api/v1/subjects/{user_ref}/erasure"): Route(
        Role.ADMIN, lambda w: f"/api/v1/subjects/u1/erasure?workspace={w.agent.workspace.slug}",
        lambda w: {"reason": "Subject request 12"}),
    ("PUT", "/api/v1/tools"): Route(
        "agent", lambda w: "/api/v1/tools",
        lambda w: {"tools": [{"name": "lookup", "description": "Finds an order.", "parameters": {"type": "object"}}]}),
    ("POST", "/api/v1/webhooks"): Route(
        Role.ADMIN, lambda w: "/api/v1/webhooks",
        lambda w: {"url": "https://hooks.example.com/other", "events": ["proposal.created"],
                   "secret": "another-webhook-secret-0123", "workspace": w.agent.workspace.slug}),
}


def optional_paths(schema: dict[str, Any]) -> list[tuple[str | int, ...]]:
    """Where an optional field sits in a body: ("reason",), or
    ("tools", 0, "description") for the objects inside a list."""
    paths: list[tuple[str | int, ...]] = []
    required = set(schema.get("required", []))
    for name, prop in schema.get("properties", {}).items():
        prop = resolved(prop)
        if name not in required and not prop.get("nullable"):
            paths.append((name,))
        items = resolved(prop.get("items", {}))
        if prop.get("type") == "array" and items.get("properties"):
            paths.extend((name, 0, *inner) for inner in optional_paths(items))
    return paths


CASES = [
    pytest.param(method, path, field, id=f"{method} {path} {'.'.join(map(str, field))}")
    for method, path, schema in operations() + EXTRA
    for field in optional_paths(schema)
]


def test_the_table_knows_every_route_with_a_body() -> None:
    assert {(method, path) for method, path, _ in operations() + EXTRA} == set(ROUTES)
    assert len(CASES) >= 25


def _client(world: World, who: str) -> APIClient:
    if who == "agent":
        return agent_client(world.agent)
    return staff_client(world.users[who])


def _send(client: APIClient, method: str, url: str, body: dict[str, Any]) -> tuple[int, Any]:
    """One call, rolled back afterwards, so the next one meets the same state."""
    sid = transaction.savepoint()
    try:
        response = getattr(client, method.lower())(url, body, format="json")
        payload = response.json() if response.content else None
    finally:
        transaction.savepoint_rollback(sid)
    if response.status_code < 400:
        return response.status_code, sorted(payload) if isinstance(payload, dict) else type(payload).__name__
    return response.status_code, payload


def _with(body: dict[str, Any], field: tuple[str | int, ...], value: Any, *, drop: bool = False) -> dict[str, Any]:
    body = copy.deepcopy(body)
    parent: Any = body
    for step in field[:-1]:
        parent = parent[step]
    if drop:
        parent.pop(field[-1], None)
    else:
        parent[field[-1]] = value
    return body


@pytest.mark.parametrize("method, path, field", CASES)
def test_null_is_the_same_as_leaving_the_field_out(world: World, method: str, path: str,
                                                   field: tuple[str | int, ...]) -> None:
    route = ROUTES[(method, path)]
    client = _client(world, route.who)
    url, body = route.url(world), route.body(world)

    absent = _send(client, method, url, _with(body, field, None, drop=True))
    null = _send(client, method, url, _with(body, field, None))

    assert null == absent


def test_the_base_bodies_work(world: World) -> None:
    """Each route's body is answered 2xx, so the comparisons above compare
    working calls, not two refusals."""
    failures = {}
    for (method, path), route in ROUTES.items():
        status, payload = _send(_client(world, route.who), method, route.url(world), route.body(world))
        if status >= 400:
            failures[f"{method} {path}"] = (status, payload)
    assert not failures


def test_a_null_entry_of_a_map_sets_nothing(world: World) -> None:
    client = staff_client(world.users[Role.ADMIN])
    url = f"/api/v1/agents/{world.agent.slug}"
    response = client.patch(url, {"strategy": "full", "limits": {"MEMORY.md": None}}, format="json")
    assert response.status_code == 200 and response.json()["limits"]["MEMORY.md"] == world.agent.limit_memory


def test_a_required_field_stays_required(world: World) -> None:
    client = agent_client(world.agent)
    response = client.put("/api/v1/memory/MEMORY.md?user=u1", {"content": None}, format="json")
    assert response.status_code == 400 and response.json()["error"]["field"] == "content"
