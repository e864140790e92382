from __future__ import annotations

from typing import Any

from rest_framework.test import APIClient

from memoryhub import services
from memoryhub.models import Agent


def agent_client(agent: Agent) -> APIClient:
    _, raw = services.issue_agent_key(agent=agent, actor=services.SYSTEM)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def staff_client(user: Any) -> APIClient:
    _, raw = services.issue_staff_token(user=user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def error_code(response: Any) -> str:
    return response.json()["error"]["code"]  # type: ignore[no-any-return]
