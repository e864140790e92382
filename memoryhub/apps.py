from __future__ import annotations

from django.apps import AppConfig


class MemoryhubConfig(AppConfig):
    name = "memoryhub"
    verbose_name = "MemoryHub"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate, pre_migrate

        from memoryhub import accesslog, login_throttle, signals  # noqa: F401  (history plumbing)

        login_throttle.connect()
        accesslog.install()

        pre_migrate.connect(_before_migrate, sender=self)
        post_migrate.connect(_reinstall_append_only_triggers, sender=self)
        post_migrate.connect(_grant_app_role, sender=self)


def _before_migrate(using: str = "default", **kwargs: object) -> None:
    from django.db import connections

    from memoryhub import immutability

    immutability.begin_migrating(connections[using])


def _reinstall_append_only_triggers(using: str = "default", **kwargs: object) -> None:
    """SQLite rebuilds a table to alter it, which drops its triggers; a flush
    on either database may have lifted them. Installing is idempotent, so
    every migrate ends with the guards of memoryhub.immutability in place."""
    from django.db import connections

    from memoryhub import immutability

    immutability.end_migrating(connections[using])
    immutability.install(connections[using])


def _grant_app_role(using: str = "default", **kwargs: object) -> None:
    """Tables a migration added are granted to the app's role at once."""
    from django.conf import settings
    from django.db import connections

    from memoryhub import db_roles

    db_roles.grant(connections[using], settings.DATABASE_APP_ROLE)
