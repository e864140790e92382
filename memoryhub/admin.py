"""The Django admin: a back-office view of every table.

It is not a second way to change memory. Memory files, their history,
proposals, sessions, logs and audit events are read-only here: content
changes go through proposals and the review console, so the four-eyes rule,
the scanner and the history cannot be sidestepped from /django-admin/.
What the admin may change (workspaces, roles, agents and their tools, key
labels) goes through the same service functions as everything else, which
record the audit event.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html
from simple_history.admin import SimpleHistoryAdmin

from memoryhub import errors, services
from memoryhub.models import (
    Agent,
    AgentSession,
    ApiKey,
    AuditEvent,
    Change,
    EntryVector,
    ErasureRecord,
    IdempotencyRecord,
    LogEntry,
    Membership,
    MemoryFile,
    Proposal,
    StaffToken,
    ToolSetting,
    Workspace,
)

admin.site.site_header = "MemoryHub administration"
admin.site.site_title = "MemoryHub admin"

User = get_user_model()
HistoricalMemoryFile = MemoryFile.history.model  # type: ignore[attr-defined]


class ReadOnlyMixin:
    """View only: no add, change or delete, whoever asks (superusers too)."""

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


def _short(text: str, length: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= length else flat[: length - 1] + "…"


# --- workspaces and roles ---------------------------------------------------------------


# The settings that govern what is served: the services' own tables, so a
# setting added there is read-only here without a change to this file.
# Names and descriptions are labels, not policy.
LABELS = ("name", "description")
WORKSPACE_GOVERNED = tuple(f for f in services.WORKSPACE_SETTINGS if f not in LABELS)
AGENT_GOVERNED = tuple(f for f in services.AGENT_SETTINGS if f not in LABELS)


def _settings_link(url: str, what: str) -> str:
    return format_html(
        '<a href="{}">Change {} on the settings page</a> — there a tightening applies at once and a '
        "weakening waits for a second admin; the Django admin cannot change them.", url, what)


@admin.register(Workspace)
class WorkspaceAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "agent_count", "created_at")
    search_fields = ("slug", "name")
    fields = ("slug", "name", "settings_page", *WORKSPACE_GOVERNED, "created_at")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Workspace]:
        return super().get_queryset(request).annotate(n_agents=Count("agents", distinct=True))

    @admin.display(description="agents", ordering="n_agents")
    def agent_count(self, obj: object) -> int:
        return int(getattr(obj, "n_agents", 0))

    @admin.display(description="governed settings")
    def settings_page(self, obj: Any) -> str:
        if obj is None or not obj.pk:
            return ("Set on the workspace settings page once the workspace exists; a new workspace starts at "
                    "the safe defaults.")
        return _settings_link(reverse("workspace-settings", args=[obj.slug]), "these")

    def get_readonly_fields(self, request: HttpRequest, obj: object = None) -> tuple[str, ...]:
        # Slugs appear in URLs and audit trails; renaming one breaks both.
        # Governed settings change only through services.update_workspace
        # (the settings page, staff REST), never as a silent no-op here.
        return ("slug", "settings_page", *WORKSPACE_GOVERNED, "created_at") if obj else (
            "settings_page", *WORKSPACE_GOVERNED, "created_at")

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: Workspace, form: object, change: bool) -> None:
        if change:
            obj.save(update_fields=["name"])
            services.record_event(
                action="workspace.update",
                workspace=obj,
                actor_user=request.user,
                target=obj,
                summary=f"Renamed workspace {obj.slug} to {obj.name!r}",
            )
            return
        try:
            workspace, _ = services.ensure_workspace(slug=obj.slug, name=obj.name, actor_user=request.user)
        except errors.DomainError as exc:
            raise ValidationError(exc.detail) from exc
        obj.pk, obj.created_at = workspace.pk, workspace.created_at


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ("user", "workspace", "role", "created_at")
    list_filter = ("role", "workspace")
    search_fields = ("user__username", "user__email", "workspace__slug")
    list_select_related = ("user", "workspace")
    raw_id_fields = ("user",)
    readonly_fields = ("created_at",)

    def get_readonly_fields(self, request: HttpRequest, obj: object = None) -> tuple[str, ...]:
        # One role per user and workspace: change the role, not the pair.
        return ("user", "workspace", "created_at") if obj else ("created_at",)

    def save_model(self, request: HttpRequest, obj: Membership, form: object, change: bool) -> None:
        membership, _ = services.set_role(user=obj.user, workspace=obj.workspace, role=obj.role,
                                          actor_user=request.user)
        obj.pk, obj.created_at = membership.pk, membership.created_at

    def delete_model(self, request: HttpRequest, obj: Membership) -> None:
        services.remove_role(membership=obj, actor_user=request.user)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Membership]) -> None:
        for membership in queryset.select_related("user", "workspace"):
            services.remove_role(membership=membership, actor_user=request.user)


# --- agents and tools ---------------------------------------------------------------------


class ToolSettingInline(admin.TabularInline):
    """Read-only: the registry changes through the console or the agent's
    own API, where the scanner, the limits and the audit apply."""

    model = ToolSetting
    extra = 0
    fields = ("position", "name", "description", "parameters")
    readonly_fields = fields
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    list_display = (
        "slug",
        "name",
        "workspace",
        "strategy",
        "write_policy",
        "consolidation_backend",
        "is_active",
        "updated_at",
    )
    list_filter = ("workspace", "strategy", "write_policy", "consolidation_backend", "is_active")
    search_fields = ("slug", "name", "description")
    list_select_related = ("workspace",)
    inlines = (ToolSettingInline,)
    fieldsets = (
        (None, {"fields": ("workspace", "slug", "name", "description", "is_active")}),
        ("Context and writes", {"fields": ("settings_page", "strategy", "write_policy", "token_encoding")}),
        ("Limits (characters)", {"fields": ("limit_soul", "limit_about", "limit_tools", "limit_user", "limit_memory")}),
        (
            "Consolidation",
            {"fields": ("consolidation_backend", "gate_hours", "gate_sessions", "daily_budget_usd")},
        ),
        ("Staleness", {"fields": ("staleness_ttl_days",)}),
        ("Dates", {"fields": ("created_at", "updated_at")}),
    )

    # Settings that govern what is served (write policy, limits, backend…)
    # change in the console, where weakening them takes a second admin; here
    # only the label and the on/off switch.
    readonly_fields = ("workspace", "slug", "settings_page", *AGENT_GOVERNED,  # type: ignore[assignment]
                       "created_at", "updated_at")

    @admin.display(description="governed settings")
    def settings_page(self, obj: Any) -> str:
        return _settings_link(reverse("agent", args=[obj.slug]), "these") if obj and obj.pk else ""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        # History, proposals and logs point at agents: deactivate instead.
        return False

    def save_model(self, request: HttpRequest, obj: Agent, form: Any, change: bool) -> None:
        changed = list(form.changed_data)
        if not changed:
            return
        obj.save(update_fields=[*changed, "updated_at"])
        services.record_event(
            action="agent.update",
            agent=obj,
            actor_user=request.user,
            target=obj,
            summary=f"Changed {', '.join(changed)} of agent {obj.slug} (Django admin)",
            details={"fields": changed},
        )


@admin.register(ToolSetting)
class ToolSettingAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("name", "agent", "position", "short_description")
    list_filter = ("agent__workspace", "agent")
    search_fields = ("name", "description", "agent__slug")
    list_select_related = ("agent",)

    @admin.display(description="description")
    def short_description(self, obj: ToolSetting) -> str:
        return _short(obj.description)


# --- keys and tokens ------------------------------------------------------------------------


class SecretAdmin(admin.ModelAdmin):
    """Keys and tokens: only the label can change; key_hash is never shown.
    New ones come from issue_agent_key / issue_token, which show the raw
    value once; the admin could not."""

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    @admin.display(description="status", ordering="revoked_at")
    def status(self, obj: Any) -> str:
        return "revoked" if obj.revoked_at else "active"

    def save_model(self, request: HttpRequest, obj: Any, form: object, change: bool) -> None:
        # Only the label: a whole-row save could undo a revocation or a
        # last_used_at update that happened while the form was open.
        obj.save(update_fields=["name"])


@admin.register(ApiKey)
class ApiKeyAdmin(SecretAdmin):
    list_display = ("prefix", "agent", "name", "status", "created_at", "created_by", "last_used_at", "revoked_at")
    list_filter = ("revoked_at", "agent__workspace", "agent")
    search_fields = ("prefix", "name", "agent__slug")
    list_select_related = ("agent", "created_by")
    fields = ("prefix", "agent", "name", "created_by", "created_at", "last_used_at", "revoked_at")
    readonly_fields = ("prefix", "agent", "created_by", "created_at", "last_used_at", "revoked_at")
    actions = ("revoke_keys",)

    @admin.action(description="Revoke selected keys", permissions=["change"])
    def revoke_keys(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        revoked, refused = 0, []
        for key in queryset.filter(revoked_at__isnull=True).select_related("agent__workspace"):
            try:
                services.revoke_agent_key(key=key, actor=request.user)
            except errors.PermissionDenied:
                refused.append(f"{key.prefix}… ({key.agent.workspace.slug})")
            else:
                revoked += 1
        self.message_user(request, f"Revoked {revoked} key(s).", messages.SUCCESS)
        if refused:
            self.message_user(
                request,
                f"Not revoked, you are not an admin of their workspace: {', '.join(refused)}.",
                messages.WARNING,
            )


@admin.register(StaffToken)
class StaffTokenAdmin(SecretAdmin):
    list_display = ("prefix", "user", "name", "status", "created_at", "last_used_at", "revoked_at")
    list_filter = ("revoked_at",)
    search_fields = ("prefix", "name", "user__username")
    list_select_related = ("user",)
    fields = ("prefix", "user", "name", "created_at", "last_used_at", "revoked_at")
    readonly_fields = ("prefix", "user", "created_at", "last_used_at", "revoked_at")
    actions = ("revoke_tokens",)

    @admin.action(description="Revoke selected tokens", permissions=["change"])
    def revoke_tokens(self, request: HttpRequest, queryset: QuerySet[StaffToken]) -> None:
        revoked = 0
        for token in queryset.filter(revoked_at__isnull=True).select_related("user"):
            services.revoke_staff_token(token=token, user=request.user)
            revoked += 1
        self.message_user(request, f"Revoked {revoked} token(s).", messages.SUCCESS)


# --- memory and its history -------------------------------------------------------------------


@admin.register(MemoryFile)
class MemoryFileAdmin(ReadOnlyMixin, SimpleHistoryAdmin):
    """Read-only, with the file's history one click away. simple-history's
    per-version page would save the old version back on POST (a revert that
    skips review, four-eyes and the scanner), so it is view-only here."""

    list_display = ("agent", "kind", "user_ref", "version", "chars", "updated_at")
    list_filter = ("kind", "agent__workspace", "agent")
    search_fields = ("agent__slug", "user_ref", "content")
    list_select_related = ("agent",)
    fields = ("agent", "kind", "user_ref", "version", "updated_at", "content")
    readonly_fields = fields
    history_list_display = ["version", "source", "actor_agent", "approved_by", "proposal_id"]

    @admin.display(description="chars")
    def chars(self, obj: MemoryFile) -> int:
        return len(obj.content)

    def revert_disabled(self, request: HttpRequest, obj: object = None) -> bool:
        return True

    def history_form_view(
        self, request: HttpRequest, object_id: str, version_id: str, extra_context: object = None
    ) -> HttpResponse:
        if request.method not in ("GET", "HEAD"):
            raise PermissionDenied("Memory history is read-only; roll back from the review console.")
        return super().history_form_view(request, object_id, version_id, extra_context)  # type: ignore[no-any-return]


@admin.register(HistoricalMemoryFile)
class HistoricalMemoryFileAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = (
        "history_id",
        "agent",
        "kind",
        "user_ref",
        "version",
        "source",
        "history_type",
        "history_date",
        "history_user",
        "actor_agent",
        "approved_by",
        "proposal_id",
        "history_change_reason",
    )
    list_filter = ("source", "kind", "history_type", "agent")
    search_fields = ("agent__slug", "user_ref", "content", "history_change_reason")
    list_select_related = ("agent", "history_user", "actor_agent", "approved_by")
    show_full_result_count = False


@admin.register(Change)
class ChangeAdmin(ReadOnlyMixin, admin.ModelAdmin):
    """Governance changes are decided in the console (four-eyes applies there)."""

    list_display = ("id", "workspace", "kind", "agent", "status", "requested_by", "created_at", "decided_by")
    list_filter = ("status", "kind", "workspace")
    list_select_related = ("workspace", "agent", "requested_by", "decided_by")


@admin.register(ErasureRecord)
class ErasureRecordAdmin(ReadOnlyMixin, admin.ModelAdmin):
    """Erasures are requested and approved in the console (four-eyes); the
    record names the subject by hash only."""

    list_display = ("id", "workspace", "subject_hash", "requested_by_username", "approved_by_username",
                    "created_at")
    list_filter = ("workspace",)
    list_select_related = ("workspace",)


@admin.register(Proposal)
class ProposalAdmin(ReadOnlyMixin, admin.ModelAdmin):
    """Decisions are made in the review console, where four-eyes applies."""

    list_display = (
        "id",
        "agent",
        "kind",
        "user_ref",
        "source",
        "status",
        "base_version",
        "author",
        "created_at",
        "decided_by",
    )
    list_filter = ("status", "source", "kind", "agent__workspace", "agent")
    search_fields = ("agent__slug", "user_ref", "reason", "proposed_content")
    list_select_related = ("agent", "author_user", "author_agent", "decided_by")

    @admin.display(description="author")
    def author(self, obj: Proposal) -> str:
        return obj.author_label


# --- sessions, logs, audit ----------------------------------------------------------------------


class LogEntryInline(ReadOnlyMixin, admin.TabularInline):
    model = LogEntry
    fields = ("id", "role", "content", "created_at")
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(AgentSession)
class AgentSessionAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("id", "agent", "user_ref", "external_id", "started_at", "ended_at", "entry_count")
    list_filter = ("agent__workspace", "agent")
    search_fields = ("agent__slug", "user_ref", "external_id")
    list_select_related = ("agent",)
    inlines = (LogEntryInline,)

    def get_queryset(self, request: HttpRequest) -> QuerySet[AgentSession]:
        return super().get_queryset(request).annotate(n_entries=Count("entries"))

    @admin.display(description="entries", ordering="n_entries")
    def entry_count(self, obj: object) -> int:
        return int(getattr(obj, "n_entries", 0))


@admin.register(LogEntry)
class LogEntryAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("id", "session_id", "agent", "user_ref", "role", "short_content", "created_at")
    list_filter = ("role", "agent")
    search_fields = ("content", "user_ref", "agent__slug")
    list_select_related = ("agent",)
    show_full_result_count = False

    @admin.display(description="content")
    def short_content(self, obj: LogEntry) -> str:
        return _short(obj.content)


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("created_at", "action", "actor", "workspace", "agent", "user_ref", "target", "summary")
    list_filter = ("action", "workspace")
    search_fields = ("action", "summary", "user_ref", "target_id", "actor_user__username")
    list_select_related = ("actor_user", "actor_agent", "agent", "workspace")
    show_full_result_count = False

    @admin.display(description="actor")
    def actor(self, obj: AuditEvent) -> str:
        return obj.actor_label

    @admin.display(description="target")
    def target(self, obj: AuditEvent) -> str:
        return f"{obj.target_type}:{obj.target_id}" if obj.target_type else ""


# --- users: never deleted ------------------------------------------------------------------------


class MembershipInline(ReadOnlyMixin, admin.TabularInline):
    """Roles are shown here and changed under Memberships (audited)."""

    model = Membership
    fields = ("workspace", "role", "created_at")
    readonly_fields = fields
    extra = 0
    can_delete = False


if admin.site.is_registered(User):
    admin.site.unregister(User)


@admin.register(User)
class MemoryHubUserAdmin(DjangoUserAdmin):
    """History rows name their authors, and the append-only history table
    refuses the SET_NULL a deletion would cause: deactivate instead."""

    inlines = (MembershipInline,)
    actions = ("deactivate_users",)
    list_display = ("username", "email", "is_active", "is_staff", "is_superuser", "last_login")

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    @admin.action(description="Deactivate selected users", permissions=["change"])
    def deactivate_users(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        done = 0
        for user in queryset:
            if user.pk == request.user.pk:
                self.message_user(request, "You cannot deactivate yourself.", messages.WARNING)
                continue
            done += services.deactivate_user(user=user, actor_user=request.user)
        self.message_user(request, f"Deactivated {done} user(s).", messages.SUCCESS)


@admin.register(IdempotencyRecord)
class IdempotencyRecordAdmin(ReadOnlyMixin, admin.ModelAdmin):
    """One-time keys (API Idempotency-Keys, console form tokens): read-only;
    the hourly purge removes expired ones."""

    list_display = ("principal", "key", "status_code", "created_at", "expires_at")
    search_fields = ("principal", "key")


@admin.register(EntryVector)
class EntryVectorAdmin(ReadOnlyMixin, admin.ModelAdmin):
    """The semantic search index: read-only (the worker writes it, erasure and
    retention delete from it); the vector bytes themselves are not shown."""

    list_display = ("agent", "user_ref", "content_hash", "created_at")
    list_filter = ("agent",)
    search_fields = ("content_hash",)
    exclude = ("vector",)
