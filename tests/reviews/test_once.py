"""One-time form tokens (reviews.once): a form submitted twice acts once,
even when both submissions arrive together."""

from __future__ import annotations

import re
import threading

import pytest
from django.db import connection
from django.http import HttpRequest, HttpResponse
from django.template import engines
from django.test import Client
from django.urls import path

from memoryhub import errors, services
from memoryhub.models import ApiKey, Role
from reviews import once
from tests.conftest import needs_postgres
from tests.factories import AgentFactory, staff


def issue_key_view(request: HttpRequest, slug: str) -> HttpResponse:
    """A key form as the console has it, with the one line reviews.once asks for."""
    agent = services.get_agent_for_user(request.user, slug)
    if request.method == "GET":
        page = engines["django"].from_string(
            '{% load once %}<form method="post">{% once_token %}</form>').render({}, request)
        return HttpResponse(page)
    try:
        once.consume(request)
        services.issue_agent_key(agent=agent, name="form", actor=request.user)
    except errors.DomainError as exc:
        return HttpResponse(exc.code, status=exc.status)
    return HttpResponse("created", status=201)


@once.once_per_submit
def decorated_view(request: HttpRequest, slug: str) -> HttpResponse:
    services.issue_agent_key(agent=services.get_agent_for_user(request.user, slug), name="d", actor=request.user)
    return HttpResponse("created", status=201)


urlpatterns = [
    path("keys/<slug:slug>/", issue_key_view),
    path("decorated/<slug:slug>/", decorated_view),
]
pytestmark = [pytest.mark.django_db, pytest.mark.urls(__name__)]


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def token_from(client: Client, url: str) -> str:
    match = re.search(r'name="once_token" value="([^"]+)"', client.get(url).content.decode())
    assert match
    return match.group(1)


def test_a_double_submitted_form_acts_once(agent, admin):
    client = signed_in(admin)
    url = f"/keys/{agent.slug}/"
    token = token_from(client, url)
    first = client.post(url, {"once_token": token})
    second = client.post(url, {"once_token": token})
    assert (first.status_code, second.status_code) == (201, 409)
    assert second.content == b"already_submitted"
    assert ApiKey.objects.filter(agent=agent).count() == 1


def test_a_fresh_token_acts_again(agent, admin):
    client = signed_in(admin)
    url = f"/keys/{agent.slug}/"
    for _ in range(2):
        assert client.post(url, {"once_token": token_from(client, url)}).status_code == 201
    assert ApiKey.objects.filter(agent=agent).count() == 2


@pytest.mark.parametrize("token", ["", "forged", "eyJ1IjoxfQ:1abc:zzz"])
def test_a_missing_or_forged_token_acts_never(agent, admin, token):
    response = signed_in(admin).post(f"/keys/{agent.slug}/", {"once_token": token})
    assert response.status_code == 400 and not ApiKey.objects.filter(agent=agent).exists()


def test_another_users_token_is_refused(agent, admin):
    url = f"/keys/{agent.slug}/"
    token = token_from(signed_in(staff(agent.workspace, Role.ADMIN)), url)
    assert signed_in(admin).post(url, {"once_token": token}).status_code == 400


def test_an_expired_token_is_refused(agent, admin, settings):
    client = signed_in(admin)
    url = f"/keys/{agent.slug}/"
    token = token_from(client, url)
    settings.SESSION_COOKIE_AGE = -1
    assert client.post(url, {"once_token": token}).status_code == 400


def test_the_decorator_redirects_a_repeat_with_a_message(agent, admin):
    client = signed_in(admin)
    url = f"/decorated/{agent.slug}/"
    token = token_from(client, f"/keys/{agent.slug}/")
    assert client.post(url, {"once_token": token}).status_code == 201
    again = client.post(url, {"once_token": token})
    assert again.status_code == 303 and again["Location"] == url
    assert ApiKey.objects.filter(agent=agent).count() == 1


@pytest.mark.django_db(transaction=True)
def test_two_submissions_at_the_same_moment_act_once():
    needs_postgres()
    agent = AgentFactory()
    admin = staff(agent.workspace, Role.ADMIN)
    clients = [signed_in(admin) for _ in range(6)]
    url = f"/keys/{agent.slug}/"
    token = token_from(clients[0], url)
    barrier = threading.Barrier(len(clients))
    statuses: list[int] = []

    def submit(client: Client) -> None:
        barrier.wait()
        try:
            statuses.append(client.post(url, {"once_token": token}).status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=submit, args=(c,)) for c in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(statuses) == [201] + [409] * 5
    assert ApiKey.objects.filter(agent=agent).count() == 1


def test_the_agent_page_carries_tokens_in_the_persona_and_key_forms(agent, admin, settings):
    settings.ROOT_URLCONF = "memoryhub.urls"
    page = signed_in(admin).get(f"/agents/{agent.slug}/").content.decode()
    # Three persona files and the key form.
    assert page.count('name="once_token"') == 4
