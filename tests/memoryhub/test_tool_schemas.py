"""GET /api/v1/memory/tool-schemas: the five memory tools as ready
function-calling definitions, from memoryhub.tool_schemas (the MCP server
lists the same definitions: tests/memoryhub/test_mcp.py)."""

from __future__ import annotations

import jsonschema
import pytest

from memoryhub import errors, tool_schemas
from tests.api_helpers import agent_client, error_code
from tests.factories import AgentFactory

pytestmark = pytest.mark.django_db

NAMES = ["memory_view", "memory_search", "memory_add", "memory_replace", "memory_remove"]
URL = "/api/v1/memory/tool-schemas"


@pytest.fixture
def client():
    return agent_client(AgentFactory())


def test_it_serves_openai_function_definitions_by_default(client):
    body = client.get(URL).json()
    assert body["format"] == "openai"
    assert [tool["function"]["name"] for tool in body["tools"]] == NAMES
    for tool, definition in zip(body["tools"], tool_schemas.TOOLS, strict=True):
        assert tool["type"] == "function"
        assert tool["function"] == {"name": definition.name, "description": definition.description,
                                    "parameters": definition.parameters}


def test_it_serves_anthropic_and_mcp_definitions(client):
    anthropic = client.get(URL, {"format": "anthropic"}).json()["tools"]
    mcp = client.get(URL, {"format": "mcp"}).json()["tools"]
    for definition, a, m in zip(tool_schemas.TOOLS, anthropic, mcp, strict=True):
        assert a == {"name": definition.name, "description": definition.description,
                     "input_schema": definition.parameters}
        assert m == {"name": definition.name, "description": definition.description,
                     "inputSchema": definition.parameters}


def test_an_unknown_format_is_a_400_naming_the_choices(client):
    response = client.get(URL, {"format": "gemini"})
    assert response.status_code == 400 and error_code(response) == "invalid"
    assert response.json()["error"]["field"] == "format"
    assert "openai, anthropic, mcp" in response.json()["error"]["detail"]


def test_the_route_needs_an_agent_key():
    from rest_framework.test import APIClient

    assert APIClient().get(URL).status_code == 401


def test_every_schema_is_valid_json_schema_and_closed():
    for tool in tool_schemas.TOOLS:
        jsonschema.Draft202012Validator.check_schema(tool.parameters)
        assert tool.parameters["additionalProperties"] is False
        assert set(tool.parameters["required"]) <= set(tool.parameters["properties"])


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        ("memory_add", {"file": "MEMORY.md"}, "memory_add needs `text`"),
        ("memory_add", {"file": "MEMORY.md", "text": "x", "colour": "red"}, "has no argument `colour`"),
        ("memory_add", {"file": "NOTES.md", "text": "x"}, "`file` must be one of SOUL.md"),
        ("memory_add", {"file": "MEMORY.md", "text": 7}, "`text` must be a string"),
        ("memory_add", {"file": "MEMORY.md", "text": ""}, "`text` is empty"),
        ("memory_search", {"query": "tea", "limit": 500}, "`limit` must be from 1 to 50"),
        ("memory_search", {"query": "tea", "limit": True}, "`limit` must be a whole number"),
        ("memory_view", ["MEMORY.md"], "takes its arguments as an object"),
    ],
)
def test_arguments_are_checked_against_the_schema_with_a_sentence(name, arguments, message):
    with pytest.raises(errors.Invalid, match=message):
        tool_schemas.check_arguments(tool_schemas.BY_NAME[name], arguments)
