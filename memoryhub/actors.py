"""Who acts: the one type every service operation takes for its acting
principal.

An `Actor` is one of
- a staff member (a Django user; `request.user` in a view, which may still
  be anonymous: the services refuse it, they do not assume login_required),
- an agent, acting on its own data with its key (agent REST, MCP),
- `SYSTEM`, the operator at the shell (management commands) and Celery
  tasks: trusted to act without a workspace role (they could reach the
  database anyway), recorded as `system`, never passed by a web or API
  entry point.

Services take it as a keyword argument (`actor=`, or the name the
operation gives the role it plays: `reviewer=`, `author_user=`) and ask the
helpers below instead of reading attributes with `getattr`: who to record
(`staff_user`), whose id four-eyes compares (`staff_id`), whether it is the
shell (`is_system`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

from django.core.exceptions import PermissionDenied
from typing_extensions import TypeIs

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User
    from django.http import HttpRequest

    from memoryhub.models import Agent


class System:
    """The operator at the shell or a background task (see the module
    docstring). One instance, `SYSTEM`; compare with `is_system`."""

    is_authenticated = False
    is_active = True
    pk = None

    def __repr__(self) -> str:
        return "SYSTEM"


SYSTEM = System()

StaffUser: TypeAlias = "User"
Actor: TypeAlias = "User | AnonymousUser | Agent | System"


def is_system(actor: object) -> TypeIs[System]:
    return actor is SYSTEM


def is_agent(actor: object) -> TypeIs[Agent]:
    from memoryhub.models import Agent

    return isinstance(actor, Agent)


def staff_user(actor: Actor | None) -> User | None:
    """The signed-in staff member acting, or None (SYSTEM, an agent, anonymous)."""
    if actor is None or is_system(actor) or is_agent(actor) or not actor.is_authenticated:
        return None
    return actor


def active_staff_user(actor: Actor | None) -> User | None:
    """The acting staff member if still active: only those hold a role."""
    user = staff_user(actor)
    return user if user is not None and user.is_active else None


def staff_id(actor: Actor | None) -> int | None:
    """The acting staff member's id (what four-eyes compares), None for anyone else."""
    user = staff_user(actor)
    return None if user is None else int(user.pk)


def username_of(actor: Actor | None) -> str:
    """The name to keep on a row: a later rename must not rewrite it ("" for SYSTEM)."""
    user = staff_user(actor)
    return user.get_username() if user is not None else ""


def signed_in_user(request: HttpRequest) -> User:
    """`request.user` in a view behind `login_required`: a staff member,
    never anonymous (the decorator sent anonymous visitors to sign in)."""
    from django.contrib.auth.models import AnonymousUser

    user = request.user
    if isinstance(user, AnonymousUser):
        raise PermissionDenied("Sign in first.")
    return user
