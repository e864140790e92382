from __future__ import annotations

from typing import Any

from django.db import migrations

from memoryhub import immutability


def forwards(apps: Any, schema_editor: Any) -> None:
    immutability.install(schema_editor.connection)


def backwards(apps: Any, schema_editor: Any) -> None:
    immutability.uninstall(schema_editor.connection)


class Migration(migrations.Migration):
    dependencies = [("memoryhub", "0001_initial")]

    operations = [migrations.RunPython(forwards, backwards)]
