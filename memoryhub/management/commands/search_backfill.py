"""Embed every scope's texts that have no vector yet (the semantic index).

    manage.py search_backfill [--agent SLUG]

Runs what the worker's embed_scope_task runs, scope by scope: the agent's
own files, then each user the agent has files or logs for. Safe to re-run:
a text that has its vector is skipped.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandParser

from memoryhub.models import Agent, LogEntry, MemoryFile
from memoryhub.search import embedding


class Command(BaseCommand):
    help = "Compute the missing search vectors of every (agent, user) scope."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--agent", help="only this agent (its slug)")

    def handle(self, *args: object, **options: object) -> None:
        agents = Agent.objects.order_by("pk")
        if options["agent"]:
            agents = agents.filter(slug=options["agent"])
        total = 0
        for agent in agents:
            users = set(MemoryFile.objects.filter(agent=agent).exclude(user_ref="").values_list("user_ref", flat=True))
            users |= set(LogEntry.objects.filter(agent=agent).values_list("user_ref", flat=True).distinct())
            total += embedding.embed_scope(agent=agent, user_ref=None)
            for user_ref in sorted(users):
                total += embedding.embed_scope(agent=agent, user_ref=user_ref)
        self.stdout.write(f"{total} vectors computed")
