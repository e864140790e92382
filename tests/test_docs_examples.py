"""What README.md and docs/api.md show agent developers is what the server
does: the README's example writes never overwrite a seeded demo file, and
the tool-schemas answer is documented exactly as it is served."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.conf import settings

from memoryhub import demo, tool_schemas
from memoryhub.models import MemoryFile
from tests.api_helpers import agent_client
from tests.factories import AgentFactory

ROOT = Path(settings.BASE_DIR)
README = (ROOT / "README.md").read_text()
API = (ROOT / "docs" / "api.md").read_text()

pytestmark = pytest.mark.django_db

WRITE_CALLS = ("add_entry", "replace_entry", "remove_entry", "write", "put")


def _written_users(text: str) -> set[str]:
    """The end users the text's example writes go to: curl calls with -X
    PUT/POST/PATCH/DELETE on /api/v1/memory/, and client write methods."""
    users: set[str] = set()
    for block in re.findall(r"```(?:sh|bash|python)\n(.*?)```", text, flags=re.S):
        joined = block.replace("\\\n", " ")
        for line in joined.splitlines():
            if re.search(r"-X (PUT|POST|PATCH|DELETE)\b", line) and "/api/v1/memory/" in line:
                users |= set(re.findall(r"[?&]user=([\w-]+)", line))
            if re.search(rf"\.({'|'.join(WRITE_CALLS)})\(", line):
                users |= set(re.findall(r"user=\"([\w-]+)\"", line))
    return users


def test_the_readmes_example_writes_go_to_a_user_the_demo_does_not_seed(settings) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    demo.seed_demo(history=False)
    written = _written_users(README)
    assert written, "the README shows example writes"
    seeded = set(MemoryFile.objects.exclude(user_ref="").values_list("user_ref", flat=True))
    assert seeded, "the demo seeds users' files"
    assert not written & seeded, f"the README's example writes overwrite seeded demo files of {written & seeded}"


def test_the_tool_schemas_answer_is_documented_exactly(settings) -> None:
    client = agent_client(AgentFactory())
    answers = {fmt: client.get("/api/v1/memory/tool-schemas", {"format": fmt}).json() for fmt in tool_schemas.FORMATS}
    assert client.get("/api/v1/memory/tool-schemas").json() == answers["openai"]  # the default
    # The whole example in docs/api.md is the served answer (with the other tools elided).
    example = json.loads(re.search(r"### Tool schemas\n.*?```json\n(.*?)```", API, flags=re.S).group(1))
    served = answers["openai"]
    assert example["format"] == served["format"] == "openai"
    documented = [tool for tool in example["tools"] if tool != "…"]
    assert documented and all(tool in served["tools"] for tool in documented)
    assert list(answers["openai"]) == ["format", "tools"]
    # Each format's element shape, as README and docs/api.md name it.
    shapes = {
        "openai": '{"type": "function", "function": {name, description, parameters}}',
        "anthropic": "{name, description, input_schema}",
        "mcp": "{name, description, inputSchema}",
    }
    for fmt, answer in answers.items():
        first = answer["tools"][0]
        keys = list(first["function"]) if fmt == "openai" else list(first)
        assert keys == ["name", "description", {"openai": "parameters", "anthropic": "input_schema",
                                                 "mcp": "inputSchema"}[fmt]]
        assert [t["function"]["name"] if fmt == "openai" else t["name"] for t in answer["tools"]] == [
            "memory_view", "memory_search", "memory_add", "memory_replace", "memory_remove", "memory_note"]
        assert shapes[fmt] in API and shapes[fmt] in README.replace("\n", " ")


def _without_descriptions(value: object) -> object:
    if isinstance(value, dict):
        return {k: _without_descriptions(v) for k, v in value.items() if k != "description"}
    if isinstance(value, list):
        return [_without_descriptions(v) for v in value]
    return value


def test_the_strict_example_is_the_served_one_but_for_descriptions(settings) -> None:
    client = agent_client(AgentFactory())
    served = client.get("/api/v1/memory/tool-schemas", {"format": "openai", "strict": "true"}).json()["tools"]
    example = json.loads(re.search(r"#### Strict mode\n.*?```json\n(.*?)```", API, flags=re.S).group(1))
    (search,) = [tool for tool in served if tool["function"]["name"] == "memory_search"]
    assert _without_descriptions(example) == _without_descriptions(search)
    assert "strict=True" in README and "hub.note(" in README and "pending_review" in README
