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

NAMES = ["memory_view", "memory_search", "memory_add", "memory_replace", "memory_remove", "memory_note"]
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


# --- strict mode (OpenAI structured outputs, Anthropic strict tool use) ---------------------------

# The providers' published rules for a strict schema, checked independently
# of memoryhub.tool_schemas. OpenAI ("Supported schemas" of structured
# outputs): every object closed with additionalProperties false, every
# property listed in required (an optional one is typed with "null"), and
# for strings no minLength/maxLength; default is not a supported keyword.
# Anthropic ("JSON Schema limitations" of strict tool use): additionalProperties
# false on objects, no numeric bounds (minimum/maximum…) and no string
# length bounds. The intersection is what both take.
FORBIDDEN = {
    "openai": {"minLength", "maxLength", "default", "pattern", "format", "patternProperties",
               "unevaluatedProperties", "propertyNames", "minProperties", "maxProperties", "uniqueItems",
               "contains", "allOf", "oneOf", "not", "if", "then", "else", "$ref", "$defs"},
    "anthropic": {"minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                  "multipleOf", "default", "pattern", "format", "minItems", "maxItems", "oneOf", "not", "if",
                  "then", "else", "$ref", "$defs", "patternProperties"},
}
ALLOWED_TYPES = {"string", "integer", "number", "boolean", "object", "array", "null"}


def provider_problems(provider: str, schema: dict, path: str = "$") -> list[str]:
    problems = [f"{path}: {key} is not allowed in strict mode" for key in schema if key in FORBIDDEN[provider]]
    if "anyOf" in schema:
        for n, branch in enumerate(schema["anyOf"]):
            problems += provider_problems(provider, branch, f"{path}|{n}")
        return problems
    types = schema.get("type")
    if isinstance(types, list) and provider == "anthropic":
        # Anthropic's grammar takes nullable values as anyOf with a null branch.
        problems.append(f"{path}: a type list; Anthropic takes anyOf with a null branch")
    types = types if isinstance(types, list) else [types]
    problems += [f"{path}: type {t!r}" for t in types if t not in ALLOWED_TYPES]
    if "null" in types and "enum" in schema and None not in schema["enum"]:
        problems.append(f"{path}: a nullable enum must list null")
    if "object" in types:
        if schema.get("additionalProperties") is not False:
            problems.append(f"{path}: additionalProperties must be false")
        properties = schema.get("properties", {})
        if set(schema.get("required", [])) != set(properties):
            problems.append(f"{path}: every property must be required")
        for name, sub in properties.items():
            problems += provider_problems(provider, sub, f"{path}.{name}")
    if "items" in schema:
        problems += provider_problems(provider, schema["items"], f"{path}[]")
    return problems


def test_the_checker_finds_what_the_default_schemas_break():
    # The default answer is not for strict mode (and stays so): the checker
    # sees its problems, so a clean strict answer below means something.
    problems = [p for tool in tool_schemas.TOOLS for p in provider_problems("openai", tool.parameters)]
    assert any("minLength" in p for p in problems) and any("every property" in p for p in problems)
    assert any("default" in p for p in problems)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_strict_schemas_keep_the_providers_rules(client, provider):
    body = client.get(URL, {"format": provider, "strict": "true"}).json()
    assert body["strict"] is True and body["format"] == provider
    assert len(body["tools"]) == len(tool_schemas.TOOLS)
    for tool in body["tools"]:
        if provider == "openai":
            assert tool["type"] == "function" and tool["function"]["strict"] is True
            schema = tool["function"]["parameters"]
        else:
            assert tool["strict"] is True
            schema = tool["input_schema"]
        jsonschema.Draft202012Validator.check_schema(schema)
        assert provider_problems(provider, schema) == []


def test_an_optional_property_is_required_and_nullable_in_strict_mode():
    schema = tool_schemas.strict_parameters(tool_schemas.BY_NAME["memory_search"].parameters)
    assert schema["required"] == ["query", "user", "limit"]
    assert schema["properties"]["query"]["type"] == "string"
    assert schema["properties"]["user"]["type"] == ["string", "null"]
    assert schema["properties"]["limit"]["type"] == ["integer", "null"]
    view = tool_schemas.strict_parameters(tool_schemas.BY_NAME["memory_view"].parameters)
    assert view["properties"]["file"]["type"] == "string" and None not in view["properties"]["file"]["enum"]
    anthropic = tool_schemas.strict_parameters(tool_schemas.BY_NAME["memory_search"].parameters, "anthropic")
    assert anthropic["required"] == ["query", "user", "limit"]
    assert anthropic["properties"]["user"]["anyOf"] == [{"type": "string"}, {"type": "null"}]
    assert anthropic["properties"]["user"]["description"].endswith("Null when you do not need it.")


def test_the_anthropic_sdks_own_strict_transform_leaves_the_strict_schemas_as_they_are(client):
    from anthropic.lib._parse._transform import transform_schema

    def as_the_sdk_writes_it(schema):
        # The SDK leaves out a `type` beside an `enum` (the enum says it all).
        if isinstance(schema, dict):
            return {k: as_the_sdk_writes_it(v) for k, v in schema.items() if not (k == "type" and "enum" in schema)}
        if isinstance(schema, list):
            return [as_the_sdk_writes_it(v) for v in schema]
        return schema

    for tool in client.get(URL, {"format": "anthropic", "strict": "true"}).json()["tools"]:
        # Nothing it does not support, so nothing moved into a description.
        assert transform_schema(tool["input_schema"]) == as_the_sdk_writes_it(tool["input_schema"]), tool["name"]
    # …and it would rewrite the default ones (their bounds move into descriptions).
    default = tool_schemas.BY_NAME["memory_search"].parameters
    assert transform_schema(default) != default


@pytest.mark.parametrize("tool", tool_schemas.TOOLS, ids=lambda t: t.name)
def test_what_a_strict_model_sends_passes_the_strict_schema_and_the_server_check(tool):
    # A strict model sends every property, null for those it does not use.
    strict = tool_schemas.strict_parameters(tool.parameters, "anthropic")
    jsonschema.Draft202012Validator.check_schema(strict)
    strict_openai = tool_schemas.strict_parameters(tool.parameters)
    example = {"file": "MEMORY.md", "query": "tea", "text": "Likes tea.", "old_text": "tea",
               "new_text": "Likes green tea.", "user": "u1"}
    call = {name: (example.get(name) if name in tool.parameters["required"] or name == "user" else None)
            for name in strict["properties"]}
    jsonschema.validate(call, strict)
    jsonschema.validate(call, strict_openai)
    checked = tool_schemas.check_arguments(tool, call)
    assert None not in checked.values()
    assert set(checked) == {name for name, value in call.items() if value is not None}


def test_the_default_answer_is_unchanged_without_strict(client):
    assert client.get(URL, {"strict": "false"}).json() == client.get(URL).json()
    assert "strict" not in client.get(URL).json()
    assert all("strict" not in tool["function"] for tool in client.get(URL).json()["tools"])


@pytest.mark.parametrize(("params", "field"), [({"format": "mcp", "strict": "true"}, "strict"),
                                               ({"strict": "yes"}, "strict")])
def test_strict_is_refused_where_it_means_nothing(client, params, field):
    response = client.get(URL, params)
    assert response.status_code == 400 and error_code(response) == "invalid"
    assert response.json()["error"]["field"] == field


def test_bounds_a_strict_schema_cannot_state_are_still_enforced():
    tool = tool_schemas.BY_NAME["memory_search"]
    with pytest.raises(errors.Invalid, match="`limit` must be from 1 to 50"):
        tool_schemas.check_arguments(tool, {"query": "tea", "user": None, "limit": 500})
    with pytest.raises(errors.Invalid, match="`query` is empty"):
        tool_schemas.check_arguments(tool, {"query": "", "user": None, "limit": None})
