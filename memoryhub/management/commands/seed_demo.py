"""python manage.py seed_demo — idempotent demo data (see memoryhub/demo.py)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryhub import demo, errors


class Command(BaseCommand):
    help = (
        "Seed the demo workspace: staff with roles, three agents with personas and tools, users' memory, "
        "sessions with logs and pending proposals of each source. Safe to run again: only what is missing "
        "is added."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--no-history", action="store_true",
                            help="Seed the demo without the 14 days of history (which only the database's owner "
                            "role may write, into an empty database).")

    def handle(self, *args: object, **options: object) -> None:
        try:
            report = demo.seed_demo(log=self.stdout.write, history=not options["no_history"])
        except errors.DomainError as exc:
            raise CommandError(f"Seeding stopped: {exc.detail}") from exc
        self.stdout.write("")
        self.stdout.write(self.style.SUCCESS(report.summary()))
        self.stdout.write("")
        self.stdout.write(demo.logins_table())
