"""python manage.py import_agent [--workspace WS] [--slug NEW] < agent.json

Creates a new agent from a document written by export_agent: settings,
tools, and every version of its files, written in order as new versions
(the original author and time go to the audit log). All or nothing: an
unknown format version, an existing slug, or any content the scanner or the
agent's limits refuse leaves nothing behind.

At the shell an import provisions a new agent with the document's settings
(the audit event names those weaker than a new agent's defaults); with
`--as USERNAME` it runs as that admin, as the staff console's import would,
and settings that loosen the gate are refused."""

from __future__ import annotations

import json
import sys
from typing import IO, TypedDict, cast

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryhub import errors, services
from memoryhub.management.base import acting_as, add_as_argument, refusal
from memoryhub.models import MemoryFile


class Options(TypedDict, total=False):
    """What argparse (or call_command) hands `handle`."""

    workspace: str | None
    slug: str | None
    as_user: str | None
    stdin: IO[str]


class Command(BaseCommand):
    help = "Create an agent from a portable JSON document (see export_agent) read from standard input."
    # call_command(..., stdin=StringIO(...)) in tests.
    stealth_options = ("stdin",)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--workspace", help="Workspace slug, created if missing (default: the agent's own).")
        parser.add_argument("--slug", help="Slug of the new agent (default: the one in the document).")
        add_as_argument(parser)

    def handle(self, *args: object, **given: object) -> None:
        options = cast(Options, given)
        stream = options.get("stdin") or sys.stdin
        try:
            document = json.load(stream)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise CommandError(f"Standard input is not a JSON document: {exc}") from exc
        actor = acting_as(options.get("as_user"))
        try:
            agent = services.import_agent(document=document, actor=actor,
                                          workspace=options.get("workspace") or None, slug=options.get("slug") or None)
        except errors.DomainError as exc:
            raise refusal(exc, prefix="Nothing was imported: ") from exc
        versions = MemoryFile.history.filter(agent=agent).count()
        self.stdout.write(self.style.SUCCESS(
            f"Imported agent {agent.slug} into workspace {agent.workspace.slug}: {agent.tools.count()} tool(s), "
            f"{versions} file version(s)."
        ))
