"""python manage.py create_staff USERNAME --workspace WS --role reviewer|admin|auditor
[--password P] [--email E]"""

from __future__ import annotations

from typing import TypedDict, cast

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from memoryhub import errors, services
from memoryhub.models import Role


class Options(TypedDict):
    """What argparse (or call_command) hands `handle`."""

    username: str
    workspace: str
    role: str
    password: str | None
    email: str


class Command(BaseCommand):
    help = (
        "Create a staff user if missing and give it a role in a workspace (created if missing), replacing any "
        "role it had there. --password sets the password, also for an existing user."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--workspace", required=True, help="Workspace slug, created if missing.")
        parser.add_argument("--role", required=True, choices=Role.values)
        parser.add_argument("--password", help="Password (checked by the password validators).")
        parser.add_argument("--email", default="", help="Email address for a new user.")

    def handle(self, *args: object, **options: object) -> None:
        try:
            # All or nothing: a refused password must not leave a new
            # workspace or user behind.
            with transaction.atomic():
                self._handle(cast(Options, options))
        except errors.DomainError as exc:
            raise CommandError(exc.detail) from exc

    def _handle(self, options: Options) -> None:
        password: str | None = options["password"]
        workspace, ws_created = services.ensure_workspace(slug=options["workspace"])
        if ws_created:
            self.stdout.write(f"Created workspace {workspace.slug}.")
        user, created = services.ensure_staff_user(
            username=options["username"], email=options["email"], password=password
        )
        if created:
            self.stdout.write(f"Created user {user.username}.")
            if not password:
                self.stdout.write(
                    "No --password given: the user has an unusable password. Use a personal token "
                    f"(python manage.py issue_token {user.username}) or set one with "
                    f"python manage.py changepassword {user.username}."
                )
        else:
            if password:
                services.set_password(user=user, password=password)
                self.stdout.write(f"Set a new password for {user.username}.")
            if not user.is_active:
                self.stderr.write(self.style.WARNING(f"User {user.username} is inactive and cannot log in."))
        membership, changed = services.set_role(user=user, workspace=workspace, role=options["role"])
        if changed:
            self.stdout.write(self.style.SUCCESS(f"{user.username} is now {membership.role} in {workspace.slug}."))
        else:
            self.stdout.write(f"{user.username} already is {membership.role} in {workspace.slug}; nothing changed.")
