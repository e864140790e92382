"""python manage.py issue_agent_key SLUG [--name N]

The raw key is the only thing written to stdout, alone on one line, so a
script can capture it (KEY=$(python manage.py issue_agent_key bot)); the
notes go to stderr. Only its SHA-256 is stored."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryhub import services
from memoryhub.models import Agent


class Command(BaseCommand):
    help = "Issue an API key for an agent and print it once (stdout); only its hash is stored."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug", help="The agent's slug.")
        parser.add_argument("--name", default="", help="A label for the key, e.g. where it is deployed.")

    def handle(self, *args: object, **options: object) -> None:
        agent = Agent.objects.select_related("workspace").filter(slug=options["slug"]).first()
        if agent is None:
            raise CommandError(f"There is no agent with the slug {options['slug']!r}.")
        if not agent.is_active:
            raise CommandError(f"Agent {agent.slug} is inactive; a key for it would not authenticate.")
        key, raw = services.issue_agent_key(agent=agent, name=options["name"], actor=services.SYSTEM)
        self.stdout.write(raw)
        self.stderr.write(
            f"Issued API key {key.prefix}… for agent {agent.slug}. It is shown only this once: store it now."
        )
