"""python manage.py mcp_stdio --agent SLUG

Serves the memory tools over MCP on stdin/stdout for one agent, for MCP
clients that start their servers as local processes. Whoever can run
manage.py can reach the database already, so no key is asked for; the
agent must exist and be active. stdout carries only the protocol: logs go
to stderr."""

from __future__ import annotations

import anyio
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryhub import mcp_server
from memoryhub.models import Agent


class Command(BaseCommand):
    help = "Serve the MCP memory tools on stdio, acting as one agent."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--agent", required=True, help="The agent's slug.")

    def handle(self, *args: object, **options: object) -> None:
        agent = Agent.objects.filter(slug=options["agent"]).first()
        if agent is None:
            raise CommandError(f"There is no agent with the slug {options['agent']!r}.")
        if not agent.is_active:
            raise CommandError(f"Agent {agent.slug} is inactive.")
        self.stderr.write(f"Serving MCP on stdio as agent {agent.slug}.")
        anyio.run(mcp_server.serve_stdio, agent.slug)
