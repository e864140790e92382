from __future__ import annotations

from django.urls import path

from memoryhub import api

urlpatterns = [
    path("context", api.ContextView.as_view(), name="api-context"),
    # Before the file route, so "search" and "tool-schemas" are never taken for a file name.
    path("memory/search", api.MemorySearchView.as_view(), name="api-memory-search"),
    path("memory/search/<int:entry_id>", api.MemorySearchEntryView.as_view(), name="api-memory-search-entry"),
    path("memory/claude-memory", api.ClaudeMemoryView.as_view(), name="api-memory-claude"),
    path("memory/notes", api.MemoryNotesView.as_view(), name="api-memory-notes"),
    path("memory/tool-schemas", api.ToolSchemasView.as_view(), name="api-memory-tool-schemas"),
    path("memory/<str:file>/versions", api.MemoryVersionsView.as_view(), name="api-memory-versions"),
    path("memory/<str:file>/entries", api.MemoryEntriesView.as_view(), name="api-memory-entries"),
    path("memory/<str:file>", api.MemoryFileView.as_view(), name="api-memory-file"),
    path("tools", api.ToolsView.as_view(), name="api-tools"),
    path("sessions", api.SessionsView.as_view(), name="api-sessions"),
    path("sessions/<int:session_id>/log", api.SessionLogView.as_view(), name="api-session-log"),
    path("sessions/<int:session_id>/end", api.SessionEndView.as_view(), name="api-session-end"),
]
