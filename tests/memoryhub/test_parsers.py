"""Every API body goes through one bounded JSON parser: too deep, too big,
NUL or unpaired surrogates are 400/413 with a sentence, never a 500 — on
PostgreSQL too, where NUL used to reach text and jsonb columns."""

from __future__ import annotations

import json

import pytest

from memoryhub import errors, services
from memoryhub.models import AuditEvent, MemoryFile, Proposal, Source, ToolSetting
from tests.api_helpers import agent_client, error_code, staff_client

pytestmark = pytest.mark.django_db

DEEP = 100_000  # past Python's recursion limit: json.loads itself overflows


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.fixture
def client(agent):
    return agent_client(agent)


@pytest.fixture
def proposal(agent):
    services.write_memory(agent=agent, kind="SOUL.md", content="v1")
    return services.propose_change(agent=agent, kind="SOUL.md", content="v2", source=Source.CONSOLIDATION)


def put_raw(client, body: str):
    return client.generic("PUT", "/api/v1/memory/SOUL.md", body, content_type="application/json")


@pytest.mark.parametrize("depth", [65, DEEP])
def test_it_refuses_a_memory_write_nested_too_deep(client, depth):
    response = put_raw(client, '{"content": "x", "reason": ' + nested(depth) + "}")
    assert response.status_code == 400 and error_code(response) == "invalid"
    assert "nested more than 64 levels" in response.json()["error"]["detail"]
    assert not MemoryFile.objects.exists()


def test_it_takes_a_body_nested_64_levels(client):
    response = put_raw(client, '{"content": "x", "reason": "r", "extra": ' + nested(63) + "}")
    assert response.status_code == 200


def test_it_refuses_deep_json_in_a_staff_reject(proposal, reviewer):
    response = staff_client(reviewer).generic(
        "POST", f"/api/v1/proposals/{proposal.pk}/reject", '{"comment": ' + nested(DEEP) + "}",
        content_type="application/json",
    )
    assert response.status_code == 400 and "nested" in response.json()["error"]["detail"]
    proposal.refresh_from_db()
    assert proposal.status == "pending"


def test_it_refuses_deep_tool_schemas_before_jsonschema_sees_them(agent, client):
    schema = {"type": "object", "properties": {}}
    node = schema
    for _ in range(200):
        child: dict = {"type": "object", "properties": {}}
        node["properties"]["a"] = child
        node = child
    response = client.put("/api/v1/tools", {"tools": [{"name": "deep", "parameters": schema}]}, format="json")
    assert response.status_code == 400 and error_code(response) == "invalid"
    assert not ToolSetting.objects.filter(agent=agent).exists()


def test_the_tool_service_refuses_a_deep_schema_from_any_entry_point(agent):
    schema: dict = {"type": "object"}
    node = schema
    for _ in range(100):
        node["properties"] = {"a": {"type": "object"}}
        node = node["properties"]["a"]
    with pytest.raises(errors.Invalid):
        services.replace_tools(agent=agent, tools=[{"name": "deep", "parameters": schema}], actor=agent)


@pytest.mark.parametrize("where", ["content", "reason", "key"])
def test_it_refuses_nul_anywhere_in_a_body(client, where):
    body = {"content": "fine", "reason": "fine"}
    if where == "key":
        body["bad\u0000key"] = "x"
    else:
        body[where] = "a\u0000b"
    response = put_raw(client, json.dumps(body))
    assert response.status_code == 400 and error_code(response) == "invalid"
    assert "NUL" in response.json()["error"]["detail"]


def test_it_refuses_nul_in_tool_parameters(agent, client):
    tools = [{"name": "t", "parameters": {"type": "object", "description": "a\u0000b"}}]
    response = client.put("/api/v1/tools", {"tools": tools}, format="json")
    assert response.status_code == 400 and "NUL" in response.json()["error"]["detail"]


def test_it_refuses_nul_in_a_reject_comment(proposal, reviewer):
    response = staff_client(reviewer).post(f"/api/v1/proposals/{proposal.pk}/reject",
                                           {"comment": "no\u0000pe"}, format="json")
    assert response.status_code == 400
    assert not AuditEvent.objects.filter(action="proposal.reject").exists()


def test_it_refuses_an_unpaired_surrogate(client):
    response = put_raw(client, '{"content": "a\\ud800b"}')
    assert response.status_code == 400 and "surrogate" in response.json()["error"]["detail"]


def test_it_refuses_nan(client):
    response = put_raw(client, '{"content": "x", "reason": NaN}')
    assert response.status_code == 400 and error_code(response) == "invalid"


def test_a_body_over_the_limit_is_413_too_large(client, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = put_raw(client, json.dumps({"content": "x" * 2000}))
    assert response.status_code == 413 and error_code(response) == "too_large"


def test_an_approve_body_of_null_is_refused(proposal, reviewer):
    response = staff_client(reviewer).generic("POST", f"/api/v1/proposals/{proposal.pk}/approve", "null",
                                              content_type="application/json")
    assert response.status_code == 400
    assert Proposal.objects.get(pk=proposal.pk).status == "pending"


def test_an_empty_approve_body_counts_as_no_comment(proposal, reviewer):
    response = staff_client(reviewer).generic("POST", f"/api/v1/proposals/{proposal.pk}/approve", "",
                                              content_type="application/json")
    assert response.status_code == 200


def test_a_number_where_text_belongs_is_refused_not_coerced(client):
    response = client.post("/api/v1/sessions", {"user": 0}, format="json")
    assert response.status_code == 400 and response.json()["error"]["field"] == "user"


@pytest.mark.parametrize("url", ["/api/v1/memory/SOUL.md?user=", "/api/v1/memory/search?q=x&user="])
def test_an_empty_user_is_refused_not_taken_for_none(client, url):
    response = client.get(url)
    assert response.status_code == 400 and response.json()["error"]["field"] == "user"


@pytest.mark.parametrize("url, body", [
    ("/api/v1/sessions", {"user": "u1", "external_id": 7}),
    ("/api/v1/sessions/{session}/log", {"entries": [{"role": "user", "content": 5}]}),
    ("/api/v1/sessions/{session}/log", {"entries": [{"role": 1, "content": "x"}]}),
])
def test_numbers_are_never_taken_as_text(agent, client, url, body):
    session = services.start_session(agent=agent, user_ref="u1")
    response = client.post(url.format(session=session.pk), body, format="json")
    assert response.status_code == 400 and error_code(response) == "invalid"


def test_a_tool_description_must_be_text(client):
    response = client.put("/api/v1/tools", {"tools": [{"name": "t", "description": 5}]}, format="json")
    assert response.status_code == 400


def test_a_user_ref_typed_composed_or_decomposed_is_one_user(agent, client):
    composed, decomposed = "jos\u00e9", "jose\u0301"
    client.put(f"/api/v1/memory/USER.md?user={decomposed}", {"content": "- likes tea"}, format="json")
    read = client.get(f"/api/v1/memory/USER.md?user={composed}").json()
    assert read["content"] == "- likes tea" and read["version"] == 1
    assert MemoryFile.objects.get(agent=agent, kind="USER.md").user_ref == composed
