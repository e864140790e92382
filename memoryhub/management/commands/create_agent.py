"""python manage.py create_agent SLUG [--workspace WS] [--name N] [--strategy S]
[--write-policy direct|review] [--backend heuristic|llm] [--update]"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from memoryhub import errors, services
from memoryhub.models import Agent, Backend, Strategy, WritePolicy

DEFAULT_WORKSPACE = "default"


class Command(BaseCommand):
    help = (
        "Create an agent (and its workspace if missing). An existing slug is refused unless --update is "
        "given, which then changes only the options passed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug", help="Agent slug (letters, numbers, hyphens, underscores); unique globally.")
        parser.add_argument("--workspace", help=f"Workspace slug, created if missing (default: {DEFAULT_WORKSPACE}).")
        parser.add_argument("--name", help="Display name (default: the slug).")
        parser.add_argument("--description", help="A line about what the agent is for.")
        parser.add_argument("--strategy", choices=Strategy.values, help="Context strategy (default: hybrid_v2).")
        parser.add_argument(
            "--write-policy",
            choices=WritePolicy.values,
            help="Agent write policy (default: the workspace's default, `review` unless changed). `direct` is "
            "allowed here, at the shell, and recorded in the audit log.",
        )
        parser.add_argument("--backend", choices=Backend.values, help="Consolidation backend (default: heuristic).")
        parser.add_argument(
            "--update",
            action="store_true",
            help="If the agent exists, change the options given instead of refusing.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        slug: str = options["slug"]
        existing = Agent.objects.select_related("workspace").filter(slug=slug).first()
        try:
            with transaction.atomic():
                if existing is not None:
                    self._update(existing, options)
                else:
                    self._create(slug, options)
        except errors.DomainError as exc:
            raise CommandError(exc.detail) from exc

    def _create(self, slug: str, options: dict[str, Any]) -> None:
        workspace, created = services.ensure_workspace(slug=options["workspace"] or DEFAULT_WORKSPACE)
        if created:
            self.stdout.write(f"Created workspace {workspace.slug}.")
        agent = services.create_agent(
            workspace=workspace,
            slug=slug,
            actor=services.SYSTEM,
            name=options["name"] or "",
            description=options["description"] or "",
            strategy=options["strategy"] or Strategy.HYBRID_V2,
            write_policy=options["write_policy"] or None,
            backend=options["backend"] or Backend.HEURISTIC,
        )
        self.stdout.write(
            self.style.SUCCESS(
                f"Created agent {agent.slug} ({agent.name}) in workspace {workspace.slug}: "
                f"strategy {agent.strategy}, write policy {agent.write_policy}, "
                f"backend {agent.consolidation_backend}."
            )
        )
        self.stdout.write(f"Issue its API key with: python manage.py issue_agent_key {agent.slug}")

    def _update(self, agent: Agent, options: dict[str, Any]) -> None:
        if not options["update"]:
            raise CommandError(
                f"An agent with the slug {agent.slug!r} already exists (workspace {agent.workspace.slug}). "
                "Pass --update to change its settings, or choose another slug."
            )
        if options["workspace"] and options["workspace"] != agent.workspace.slug:
            raise CommandError(
                f"Agent {agent.slug} belongs to workspace {agent.workspace.slug}; it cannot be moved to "
                f"{options['workspace']}."
            )
        wanted = {
            "name": options["name"],
            "description": options["description"],
            "strategy": options["strategy"],
            "write_policy": options["write_policy"],
            "backend": options["backend"],
        }
        update = services.update_agent(
            agent=agent, settings={k: v for k, v in wanted.items() if v is not None}, actor=services.SYSTEM
        )
        if update.applied:
            self.stdout.write(self.style.SUCCESS(f"Updated agent {agent.slug}: {', '.join(update.applied)}."))
        else:
            self.stdout.write(f"Agent {agent.slug} already has these settings; nothing changed.")
