"""python manage.py export_agent SLUG [--with-users[=current|history]] > agent.json

Writes the agent (settings, tools, persona files with their full history,
and optionally its users' files) as a versioned JSON document on standard
output; docs/compliance.md describes the format. Streams: the history is
written as it is read."""

from __future__ import annotations

from typing import TypedDict, cast

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryhub import errors, services
from memoryhub.models import Agent
from memoryhub.services import portability


class Options(TypedDict):
    """What argparse (or call_command) hands `handle`."""

    slug: str
    with_users: str


class Command(BaseCommand):
    help = "Write an agent as a portable JSON document (docs/compliance.md) on standard output."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug", help="The agent's slug.")
        parser.add_argument(
            "--with-users",
            nargs="?",
            const=portability.USERS_CURRENT,
            default=portability.USERS_NONE,
            choices=[portability.USERS_CURRENT, portability.USERS_HISTORY],
            help="Also write the users' USER.md and MEMORY.md: their current version (--with-users), or every "
            "version (--with-users=history).",
        )

    def handle(self, *args: object, **given: object) -> None:
        options = cast(Options, given)
        agent = Agent.objects.select_related("workspace").filter(slug=options["slug"]).first()
        if agent is None:
            raise CommandError(f"There is no agent {options['slug']!r}.")
        try:
            chunks = services.export_agent(agent=agent, actor=services.SYSTEM, users=options["with_users"])
        except errors.DomainError as exc:
            raise CommandError(exc.detail) from exc
        for chunk in chunks:
            self.stdout.write(chunk, ending="")
