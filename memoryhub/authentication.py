"""Bearer authentication for agents (API keys) and staff (personal tokens).

Both arrive as `Authorization: Bearer <secret>`; the secret's prefix says
which kind it is. An agent request carries no Django user: `request.user` is
anonymous and `request.auth` is an AgentAuth, so no staff permission can
ever be granted to an agent key by accident.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AnonymousUser
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions, permissions
from rest_framework.request import Request

from memoryhub import services
from memoryhub.models import Agent, ApiKey, StaffToken


@dataclass(frozen=True)
class AgentAuth:
    agent: Agent
    key: ApiKey


@dataclass(frozen=True)
class StaffAuth:
    token: StaffToken


def _bearer(request: Request) -> str | None:
    header = authentication.get_authorization_header(request).decode("latin-1")
    scheme, _, secret = header.partition(" ")
    if scheme.lower() != "bearer":
        return None
    secret = secret.strip()
    if not secret:
        raise exceptions.AuthenticationFailed("The Authorization header has no token after 'Bearer'.")
    return secret


class BearerAuthentication(authentication.BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[object, object] | None:
        secret = _bearer(request)
        if secret is None:
            return None
        found_agent = services.agent_for_key(secret)
        if found_agent is not None:
            agent, key = found_agent
            services.touch_last_used(ApiKey, key.pk, key.last_used_at)
            return AnonymousUser(), AgentAuth(agent=agent, key=key)
        found_user = services.user_for_token(secret)
        if found_user is not None:
            user, token = found_user
            services.touch_last_used(StaffToken, token.pk, token.last_used_at)
            return user, StaffAuth(token=token)
        raise exceptions.AuthenticationFailed("This API key or token is unknown or has been revoked.")

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="memoryhub"'


class SessionAuthentication(authentication.SessionAuthentication):
    """Staff signed in to the web console may use the staff API (with CSRF)."""


class IsAgent(permissions.BasePermission):
    message = "This route is for agents: authenticate with the agent's API key."

    def has_permission(self, request: Request, view: object) -> bool:
        if isinstance(request.auth, AgentAuth):
            return True
        if not (request.user and request.user.is_authenticated):
            raise exceptions.NotAuthenticated("Authenticate with 'Authorization: Bearer <agent API key>'.")
        return False


class IsStaff(permissions.BasePermission):
    message = "This route is for staff: agent keys cannot use it."

    def has_permission(self, request: Request, view: object) -> bool:
        if isinstance(request.auth, AgentAuth):
            return False
        if not (request.user and request.user.is_authenticated):
            raise exceptions.NotAuthenticated(
                "Sign in, or authenticate with 'Authorization: Bearer <personal token>'."
            )
        return True


class BearerScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    target_class = "memoryhub.authentication.BearerAuthentication"
    name = "bearer"

    def get_security_definition(self, auto_schema: object) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An agent API key (mh_…) on agent routes; a staff personal token (mhs_…) on staff routes.",
        }


class SessionScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    target_class = "memoryhub.authentication.SessionAuthentication"
    name = "session"

    def get_security_definition(self, auto_schema: object) -> dict[str, str]:
        return {"type": "apiKey", "in": "cookie", "name": "sessionid",
                "description": "A signed-in staff session (the web console); unsafe methods need the CSRF token."}
