"""Over-long URLs and headers are answered by the app, in the API's error
body (gunicorn's own limits sit above these), and a NUL in a URL never
reaches a database lookup."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from memoryhub.models import Role
from tests.api_helpers import agent_client, error_code, staff_client
from tests.factories import staff

pytestmark = pytest.mark.django_db


def test_a_url_over_the_limit_is_a_json_414(agent):
    response = agent_client(agent).get("/api/v1/context?user=" + "a" * 9000)
    assert response.status_code == 414 and error_code(response) == "uri_too_long"
    assert response["Content-Type"] == "application/json"


def test_a_url_just_under_the_limit_is_served(agent, settings):
    settings.MEMORYHUB_MAX_URL_BYTES = 300
    response = agent_client(agent).get("/api/v1/context?user=" + "a" * 255)
    assert response.status_code == 200


def test_an_oversized_header_is_a_json_431(agent):
    response = agent_client(agent).get("/api/v1/context?user=u1", HTTP_X_PADDING="p" * 9000)
    assert response.status_code == 431 and error_code(response) == "headers_too_large"
    assert "X-Padding" in response.json()["error"]["detail"]


def test_too_many_headers_are_a_json_431(agent, settings):
    settings.MEMORYHUB_MAX_HEADER_COUNT = 10
    extra = {f"HTTP_X_H{i}": "v" for i in range(11)}
    response = agent_client(agent).get("/api/v1/context?user=u1", **extra)
    assert response.status_code == 431 and error_code(response) == "headers_too_large"


def test_the_console_gets_a_plain_414():
    response = APIClient().get("/login/?next=" + "a" * 9000)
    assert response.status_code == 414 and response["Content-Type"].startswith("text/plain")


@pytest.mark.parametrize("url", [
    "/api/v1/memory/USER.md?user=a%00b",
    "/api/v1/memory/search?q=a%00b",
    "/api/v1/context?user=u1&session=1%00",
])
def test_a_nul_in_an_agent_query_is_a_400(agent, url):
    response = agent_client(agent).get(url)
    assert response.status_code == 400 and error_code(response) == "invalid"


def test_a_nul_in_a_staff_query_is_a_400(agent):
    response = staff_client(staff(agent.workspace, Role.REVIEWER)).get("/api/v1/proposals?agent=x%00y")
    assert response.status_code == 400 and "NUL" in response.json()["error"]["detail"]
