from __future__ import annotations

from typing import Any

from django.db import migrations

from memoryhub import immutability


# The append-only tables only, as when this was written; 0006 installs the
# guards of every table.
def forwards(apps: Any, schema_editor: Any) -> None:
    immutability.install(schema_editor.connection, tables=immutability.APPEND_ONLY_TABLES)


def backwards(apps: Any, schema_editor: Any) -> None:
    immutability.uninstall(schema_editor.connection, tables=immutability.APPEND_ONLY_TABLES)


class Migration(migrations.Migration):
    dependencies = [("memoryhub", "0001_initial")]

    operations = [migrations.RunPython(forwards, backwards)]
