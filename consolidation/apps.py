from __future__ import annotations

from django.apps import AppConfig


class ConsolidationConfig(AppConfig):
    name = "consolidation"
    verbose_name = "Consolidation (dreaming)"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from consolidation import sweeps

        # memoryhub imports no other app: this app adds its rows to the erasure sweep.
        sweeps.register()
