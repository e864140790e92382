"""python manage.py create_agent SLUG [--workspace WS] [--name N] [--strategy S]
[--write-policy direct|review] [--backend heuristic|llm] [--update] [--as USERNAME] [--reason R]

Creating an agent is provisioning: the shell may give a new agent any
policy, and the audit event names the ones weaker than a new agent's
defaults. Changing an existing agent (`--update`) goes through
services.update_agent, as the console and the staff API do: a loosening is
a pending change requested by the admin named with `--as`, which another
admin approves; without `--as` a loosening is refused."""

from __future__ import annotations

from typing import TypedDict, cast

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from memoryhub import errors, services
from memoryhub.actors import Actor
from memoryhub.management.base import acting_as, add_as_argument, refusal
from memoryhub.models import Agent, Backend, Strategy, Workspace, WritePolicy

DEFAULT_WORKSPACE = "default"


class Options(TypedDict):
    """What argparse (or call_command) hands `handle`: None for an option
    not given."""

    slug: str
    workspace: str | None
    name: str | None
    description: str | None
    strategy: str | None
    write_policy: str | None
    backend: str | None
    update: bool
    as_user: str | None
    reason: str


class Command(BaseCommand):
    help = (
        "Create an agent (and its workspace if missing). An existing slug is refused unless --update is "
        "given, which then changes only the options passed, under the same rules as the console: loosening a "
        "setting needs --as USERNAME and becomes a change another admin approves."
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
            help="Agent write policy (default: the workspace's default, `review` unless changed). A new agent may "
            "start under `direct` (recorded in the audit log); switching an existing one to `direct` is a change "
            "another admin approves.",
        )
        parser.add_argument("--backend", choices=Backend.values, help="Consolidation backend (default: heuristic).")
        parser.add_argument(
            "--update",
            action="store_true",
            help="If the agent exists, change the options given instead of refusing.",
        )
        add_as_argument(parser)
        parser.add_argument("--reason", default="", help="Why the settings change (kept with a pending change).")

    def handle(self, *args: object, **given: object) -> None:
        options = cast(Options, given)
        slug = options["slug"]
        actor = acting_as(options["as_user"])
        try:
            with transaction.atomic():
                existing = self._existing(slug, actor, update=options["update"])
                if existing is not None:
                    self._update(existing, options, actor)
                else:
                    self._create(slug, options, actor)
        except errors.DomainError as exc:
            raise refusal(exc) from exc

    @staticmethod
    def _existing(slug: str, actor: Actor, *, update: bool) -> Agent | None:
        if services.is_system(actor):
            return Agent.objects.select_related("workspace").filter(slug=slug).first()
        # Through the scoped lookup, as the staff API: an agent outside the
        # user's workspaces is not found, whatever the shell could see.
        if update:
            return services.get_agent_for_user(actor, slug)
        return services.visible_agents(actor).filter(slug=slug).first()

    def _workspace(self, slug: str, actor: Actor) -> Workspace:
        if services.is_system(actor):
            workspace, created = services.ensure_workspace(slug=slug)
            if created:
                self.stdout.write(f"Created workspace {workspace.slug}.")
            return workspace
        found = Workspace.objects.filter(slug=slug).first()
        if found is None:
            raise errors.NotFound(f"There is no workspace {slug!r}; only the operator (without --as) creates one.")
        return found

    def _create(self, slug: str, options: Options, actor: Actor) -> None:
        workspace = self._workspace(options["workspace"] or DEFAULT_WORKSPACE, actor)
        agent = services.create_agent(
            workspace=workspace,
            slug=slug,
            actor=actor,
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

    def _update(self, agent: Agent, options: Options, actor: Actor) -> None:
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
            agent=agent, settings={k: v for k, v in wanted.items() if v is not None}, actor=actor,
            reason=options["reason"],
        )
        if update.change is not None:
            change = update.change
            self.stdout.write(self.style.WARNING(
                f"Loosening {', '.join(update.weakens)} of agent {agent.slug} takes a second admin: requested "
                f"change #{change.pk}, nothing applied yet. Another admin approves it on the console's Changes page "
                f"(/changes/) or with POST /api/v1/changes/{change.pk}/approve."
            ))
        elif update.applied:
            self.stdout.write(self.style.SUCCESS(f"Updated agent {agent.slug}: {', '.join(update.applied)}."))
        else:
            self.stdout.write(f"Agent {agent.slug} already has these settings; nothing changed.")
