"""Domain operations: the one way in for the agent REST API, the MCP
server, the staff REST API, the HTMX views, the management commands, the
Celery tasks and the tests.

One module per noun; each operation is keyword-only and typed, takes the
acting principal (a staff user, the agent itself, or SYSTEM for the shell
and tasks) and checks role, workspace and four-eyes itself. Writes that
span models run in one transaction with their audit event. Rules live here,
never in a view, serializer, form, signal or `save()`.
"""

from __future__ import annotations

from memoryhub.actors import SYSTEM, Actor, System, is_system, staff_id, staff_user, username_of
from memoryhub.policy import authors_of
from memoryhub.services._write import make_diff
from memoryhub.services.access import (
    ADMIN_ROLES,
    READ_ROLES,
    REVIEW_ROLES,
    can_review,
    get_agent_for_user,
    get_proposal_for_user,
    is_admin,
    require_admin,
    require_reviewer,
    require_role,
    role_in,
    visible_agents,
    visible_proposals,
    workspace_ids_for,
)
from memoryhub.services.agents import (
    AGENT_SETTINGS,
    POLICY_FIELDS,
    WORKSPACE_SETTINGS,
    NeedsRequester,
    SettingsUpdate,
    create_agent,
    ensure_workspace,
    update_agent,
    update_workspace,
)
from memoryhub.services.audit import record_event
from memoryhub.services.changes import (
    StaleChange,
    approve_change,
    get_change_for_user,
    reject_change,
    request_release,
    visible_changes,
    withdraw_change,
)
from memoryhub.services.credentials import (
    AGENT_KEY_PREFIX,
    STAFF_TOKEN_PREFIX,
    agent_for_key,
    get_agent_key,
    hash_secret,
    issue_agent_key,
    issue_staff_token,
    revoke_agent_key,
    revoke_staff_token,
    touch_last_used,
    user_for_token,
)
from memoryhub.services.entries import ENTRY_MAX, add_entry, remove_entry, replace_entry
from memoryhub.services.erasure import (
    COUNT_LABELS,
    ERASE_ROLES,
    NothingToErase,
    count_lines,
    erasure_records,
    pending_counts,
    pending_erasures,
    preview_erasure,
    request_erasure,
    subject_hash,
)
from memoryhub.services.limits import (
    SOFT_LIMIT_CEILING,
    check_limit,
    check_safe,
    compress_warning,
    usage_line,
    validate_content,
    validate_target,
    validate_text,
    validate_user_ref,
)
from memoryhub.services.memory import (
    FileView,
    WriteResult,
    edit_memory,
    file_versions,
    get_file,
    is_stale,
    read_memory,
    view_of,
    withhold_file,
    write_memory,
)
from memoryhub.services.notes import (
    NOTES_DAYS,
    NoteView,
    SavedNote,
    add_note,
    end_session_with_note,
    recent_notes,
)
from memoryhub.services.pending import PendingChange, own_pending_changes
from memoryhub.services.portability import (
    AGENT_FORMAT,
    AGENT_FORMAT_VERSION,
    export_agent,
    import_agent,
)
from memoryhub.services.proposals import (
    BULK_MAX,
    BulkItem,
    BulkResult,
    approve_proposal,
    claim_proposal,
    clean_reason_code,
    decide_bulk,
    propose_change,
    propose_persona_edit,
    propose_rollback,
    rebase_proposal,
    reject_proposal,
    revise_proposal,
    special_categories,
    unclaim_proposal,
    withdraw_proposal,
)
from memoryhub.services.retention import redact_expired_logs, retention_status
from memoryhub.services.sessions import (
    MAX_LOG_BATCH,
    MAX_LOG_ENTRY_CHARS,
    MAX_LOG_REQUEST_CHARS,
    append_log,
    end_session,
    get_session,
    session_context,
    start_session,
)
from memoryhub.services.staff import (
    deactivate_user,
    ensure_staff_user,
    grant_superuser,
    remove_role,
    set_password,
    set_role,
)
from memoryhub.services.subjects import (
    EXPORT_ROLES,
    Subject,
    SubjectExport,
    export_subject,
    find_subject,
    subject_in,
)
from memoryhub.services.tools import (
    MAX_TOOLS,
    TOOL_DESCRIPTION_MAX,
    record_tool_change,
    register_tool,
    replace_tools,
    validate_tool,
    validate_tools,
)

__all__ = [
    "ADMIN_ROLES", "AGENT_KEY_PREFIX", "AGENT_SETTINGS", "ENTRY_MAX", "MAX_LOG_BATCH", "MAX_LOG_ENTRY_CHARS",
    "MAX_LOG_REQUEST_CHARS", "MAX_TOOLS", "POLICY_FIELDS", "READ_ROLES", "REVIEW_ROLES", "SOFT_LIMIT_CEILING",
    "STAFF_TOKEN_PREFIX", "SYSTEM", "TOOL_DESCRIPTION_MAX", "WORKSPACE_SETTINGS", "FileView", "NeedsRequester",
    "SettingsUpdate",
    "StaleChange", "WriteResult", "add_entry", "agent_for_key", "append_log", "approve_change", "approve_proposal",
    "authors_of", "can_review", "check_limit", "check_safe", "compress_warning", "create_agent",
    "deactivate_user", "edit_memory", "end_session", "ensure_staff_user", "ensure_workspace", "file_versions",
    "get_agent_for_user", "get_agent_key", "get_change_for_user", "get_file", "get_proposal_for_user",
    "get_session", "grant_superuser", "hash_secret", "is_admin", "is_stale",
    "is_system", "issue_agent_key",
    "issue_staff_token", "make_diff", "propose_change", "propose_persona_edit", "propose_rollback",
    "read_memory", "rebase_proposal", "record_event", "record_tool_change", "register_tool", "reject_change",
    "reject_proposal", "remove_entry", "remove_role",
    "replace_entry", "replace_tools", "request_release", "require_admin", "require_reviewer",
    "require_role", "revise_proposal", "revoke_agent_key", "revoke_staff_token", "role_in", "session_context",
    "set_password", "set_role", "start_session", "touch_last_used", "update_agent", "update_workspace",
    "usage_line", "user_for_token", "validate_content", "validate_target", "validate_text",
    "validate_tool", "validate_tools", "validate_user_ref", "view_of", "visible_agents", "visible_changes",
    "visible_proposals", "withdraw_change", "withdraw_proposal", "withhold_file", "workspace_ids_for",
    "write_memory",
]
__all__ += ["AGENT_FORMAT", "AGENT_FORMAT_VERSION", "export_agent", "import_agent"]
__all__ += ["EXPORT_ROLES", "Subject", "SubjectExport", "export_subject", "find_subject", "subject_in"]
__all__ += ["COUNT_LABELS", "ERASE_ROLES", "NothingToErase", "count_lines", "erasure_records", "pending_counts",
            "pending_erasures", "preview_erasure", "request_erasure", "subject_hash",
            "redact_expired_logs", "retention_status"]
__all__ += ["BULK_MAX", "BulkItem", "BulkResult", "claim_proposal", "clean_reason_code", "decide_bulk",
            "unclaim_proposal"]
__all__ += ["special_categories"]
__all__ += ["NOTES_DAYS", "NoteView", "SavedNote", "add_note", "end_session_with_note", "recent_notes"]
__all__ += ["PendingChange", "own_pending_changes"]
__all__ += ["Actor", "System", "staff_id", "staff_user", "username_of"]
