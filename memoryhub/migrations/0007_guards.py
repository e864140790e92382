"""The database guards of memoryhub.immutability: append-only history, log
and audit rows, final decided proposals, the served row equal to its
latest history row. Reinstalled after every migrate too (apps.py)."""

from __future__ import annotations

from typing import Any

from django.db import migrations

from memoryhub import immutability


def forwards(apps: Any, schema_editor: Any) -> None:
    immutability.install(schema_editor.connection)


def backwards(apps: Any, schema_editor: Any) -> None:
    immutability.uninstall(schema_editor.connection)


class Migration(migrations.Migration):
    dependencies = [("memoryhub", "0006_actor_usernames")]

    operations = [migrations.RunPython(forwards, backwards)]
