"""What the management commands share: who acts, and how a refusal reads.

A command acts as the operator at the shell (services.SYSTEM) unless told
`--as USERNAME`; then it acts as that staff user, with their role in the
object's workspace, exactly as the console and the staff API would. The
services decide what each principal may do: SYSTEM provisions (new agents,
workspaces, staff, keys) and tightens, but loosens nothing alone, because a
loosening is a change a second admin approves and SYSTEM is nobody four-eyes
could tell apart from that second admin (docs/operations.md).
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError, CommandParser

from memoryhub import errors, services
from memoryhub.actors import Actor

AS_HELP = (
    "Act as this staff user, with their role in the agent's workspace, as the console would. A setting that "
    "loosens the gate (write policy to direct, higher limits or budget, another backend) then becomes a pending "
    "change that another admin approves. Without --as the command acts as the operator (SYSTEM), which may "
    "tighten settings but not loosen one."
)


def add_as_argument(parser: CommandParser) -> None:
    parser.add_argument("--as", dest="as_user", metavar="USERNAME", help=AS_HELP)


def acting_as(username: str | None) -> Actor:
    """SYSTEM, or the named active staff user."""
    if not username:
        return services.SYSTEM
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise CommandError(f"There is no user named {username!r} to act as (--as).")
    if not user.is_active:
        raise CommandError(f"User {username} is inactive and cannot act (--as).")
    return user


def refusal(exc: errors.DomainError, prefix: str = "") -> CommandError:
    """The service's sentence as the command's error. Raise it `from exc`:
    the DomainError (its code and status) stays the cause, for scripts and
    tests that need more than the exit status."""
    detail = exc.detail
    if isinstance(exc, services.NeedsRequester):
        detail += " Pass --as USERNAME (an admin of the workspace) to request it as a change another admin approves."
    return CommandError(prefix + detail)
