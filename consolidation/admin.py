"""Consolidation runs and pair states in the Django admin: read-only. Runs are started by the
gate, the API or the review console, and finished by workers; nothing here
may edit one."""

from __future__ import annotations

from django.contrib import admin

from consolidation.models import ConsolidationPair, ConsolidationRun
from memoryhub.admin import ReadOnlyMixin


@admin.register(ConsolidationRun)
class ConsolidationRunAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("id", "agent", "user_ref", "status", "trigger", "backend", "attempts", "tokens_in", "tokens_out",
                    "cost_usd", "created_at", "finished_at")
    list_filter = ("status", "trigger", "backend")
    search_fields = ("agent__slug", "user_ref")
    list_select_related = ("agent",)
    date_hierarchy = "created_at"
    readonly_fields = [field.name for field in ConsolidationRun._meta.fields] + ["proposals"]



@admin.register(ConsolidationPair)
class ConsolidationPairAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("id", "agent", "user_ref", "needs_attention", "attention_code", "attention_since",
                    "transient_failures", "next_attempt_at")
    list_filter = ("needs_attention", "attention_code")
    search_fields = ("agent__slug", "user_ref")
    list_select_related = ("agent",)
    readonly_fields = [field.name for field in ConsolidationPair._meta.fields]
