"""python manage.py reset_2fa USERNAME

Removes a staff user's authenticator and recovery codes (a lost phone);
they enrol again at their next sign-in. Audited."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryhub import services
from reviews import two_factor


class Command(BaseCommand):
    help = "Reset a staff user's two-factor sign-in (authenticator and recovery codes)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")

    def handle(self, *args: object, **options: object) -> None:
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"There is no user {options['username']!r}.")
        if two_factor.reset(user=user, actor=services.SYSTEM):
            self.stdout.write(self.style.SUCCESS(
                f"Two-factor sign-in of {user.get_username()} was reset; they enrol again at their next sign-in."))
        else:
            self.stdout.write(f"{user.get_username()} had no two-factor sign-in; nothing changed.")
