"""Finished consolidation runs are final (memoryhub.immutability)."""

from __future__ import annotations

from typing import Any

from django.db import migrations

from memoryhub import immutability


def forwards(apps: Any, schema_editor: Any) -> None:
    immutability.install(schema_editor.connection, tables=(immutability.RUN,))


def backwards(apps: Any, schema_editor: Any) -> None:
    immutability.uninstall(schema_editor.connection, tables=(immutability.RUN,))


class Migration(migrations.Migration):
    dependencies = [("consolidation", "0002_pair_state_and_retry"), ("memoryhub", "0007_guards")]

    operations = [migrations.RunPython(forwards, backwards)]
