from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.openai_server import OpenAIServer


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A fake OpenAI-compatible endpoint on 127.0.0.1; see tests/openai_server.py."""
    with OpenAIServer() as server:
        yield server
