"""python manage.py issue_token USERNAME [--name N]

The raw token is the only thing written to stdout, alone on one line; the
notes go to stderr. Only its SHA-256 is stored."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryhub import services


class Command(BaseCommand):
    help = "Issue a personal API token for a staff user and print it once (stdout); only its hash is stored."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="A label for the token, e.g. the machine it is used on.")

    def handle(self, *args: object, **options: object) -> None:
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"There is no user named {options['username']!r}.")
        if not user.is_active:
            raise CommandError(f"User {user.username} is inactive; a token for it would not authenticate.")
        token, raw = services.issue_staff_token(user=user, name=options["name"])
        self.stdout.write(raw)
        self.stderr.write(
            f"Issued personal token {token.prefix}… for {user.username}. It is shown only this once: store it now."
        )
        if not user.memberships.exists():
            self.stderr.write(f"Note: {user.username} has no role in any workspace yet (see create_staff).")
