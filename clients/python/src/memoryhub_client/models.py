"""What the API answers, as typed, immutable values. Each keeps the JSON it
came from in `raw`, so fields the server adds later are never lost."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


@dataclass(frozen=True)
class Section:
    name: str
    file: str | None
    version: int | None
    tokens: int


@dataclass(frozen=True)
class Context:
    """The agent's assembled system prompt for one user."""

    agent: str
    user: str
    strategy: str
    system_prompt: str
    sections: list[Section]
    tokens: int
    on_demand: list[str]
    snapshot: dict[str, Any]
    etag: str
    raw: dict[str, Any] = field(repr=False)

    @classmethod
    def from_json(cls, data: dict[str, Any], etag: str = "") -> Context:
        return cls(
            agent=data["agent"], user=data["user"], strategy=data["strategy"], system_prompt=data["system_prompt"],
            sections=[Section(name=s["name"], file=s.get("file"), version=s.get("version"), tokens=s["tokens"])
                      for s in data["sections"]],
            tokens=data["tokens"], on_demand=list(data.get("on_demand", [])), snapshot=data.get("snapshot", {}),
            etag=etag or data.get("etag", ""), raw=data,
        )


@dataclass(frozen=True)
class PendingChange:
    """One of the agent's own proposals on a file, waiting for review: NOT
    served, and never part of `MemoryFile.content` or any context."""

    proposal: int
    created_at: datetime | None
    base_version: int
    adds: list[str]
    removes: list[str]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PendingChange:
        return cls(proposal=data["proposal"], created_at=_time(data.get("created_at")),
                   base_version=data.get("base_version", 0), adds=list(data.get("adds", [])),
                   removes=list(data.get("removes", [])))


@dataclass(frozen=True)
class MemoryFile:
    """One memory file as the read tool serves it."""

    file: str
    scope: str
    exists: bool
    content: str
    version: int
    chars: int
    limit: int
    limit_kind: str
    updated_at: datetime | None
    stale: bool
    withheld: bool
    blocked: list[str]
    raw: dict[str, Any] = field(repr=False)
    # This agent's own changes waiting for review (read your own writes).
    pending_review: list[PendingChange] = field(default_factory=list)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MemoryFile:
        return cls(
            file=data["file"], scope=data["scope"], exists=data["exists"], content=data["content"],
            version=data["version"], chars=data["chars"], limit=data["limit"], limit_kind=data["limit_kind"],
            updated_at=_time(data.get("updated_at")), stale=bool(data.get("stale")),
            withheld=bool(data.get("withheld")), blocked=list(data.get("blocked", [])), raw=data,
            pending_review=[PendingChange.from_json(item) for item in data.get("pending_review", [])],
        )


@dataclass(frozen=True)
class WriteOutcome:
    """A write's answer: applied (200, a new version — or none when nothing
    changed) or pending review (202, a proposal a person must approve)."""

    applied: bool
    file: str | None = None
    version: int | None = None
    chars: int | None = None
    warning: str | None = None
    proposal: int | None = None
    status: str = "applied"
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def pending(self) -> bool:
        return not self.applied

    @classmethod
    def from_json(cls, data: dict[str, Any], status_code: int) -> WriteOutcome:
        if status_code == 202:
            return cls(applied=False, proposal=data["proposal"], status=data.get("status", "pending"), raw=data)
        return cls(applied=True, file=data["file"], version=data["version"], chars=data["chars"],
                   warning=data.get("warning"), raw=data)


@dataclass(frozen=True)
class SearchHit:
    """One search result, one entry: a file's line (`source == "file"`:
    `file`, `version`, `line`, its served `text`) or a log entry
    (`source == "log"`: `session`, `entry`, `role`). `snippet` marks the
    matched words `**like this**`; `matched` counts the query's terms found;
    `how` names the rankings that found it (`keyword`, `semantic`)."""

    source: str
    snippet: str
    score: float
    created_at: datetime | None
    file: str | None = None
    session: int | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)
    # Added after `raw` so that the earlier fields keep their positions.
    version: int | None = None
    line: int | None = None
    text: str | None = None
    entry: int | None = None
    role: str | None = None
    matched: int = 0
    how: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SearchHit:
        return cls(source=data["source"], snippet=data["snippet"], score=float(data["score"]),
                   created_at=_time(data.get("created_at")), file=data.get("file"), session=data.get("session"),
                   raw=data, version=data.get("version"), line=data.get("line"), text=data.get("text"),
                   entry=data.get("entry"), role=data.get("role"), matched=int(data.get("matched", 0)),
                   how=tuple(data.get("how", ())))


@dataclass(frozen=True)
class Session:
    id: int
    user: str
    started_at: datetime | None
    snapshot: dict[str, Any]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Session:
        return cls(id=data["id"], user=data["user"], started_at=_time(data.get("started_at")),
                   snapshot=data.get("snapshot", {}))


@dataclass(frozen=True)
class LogEntry:
    """One line of a session log; `role` is user, assistant, tool or note."""

    role: str
    content: str

    def as_json(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True)
class LogAppended:
    appended: int
    last_id: int


@dataclass(frozen=True)
class SessionEnded:
    id: int
    ended_at: datetime | None


@dataclass(frozen=True)
class ClaudeMemoryResult:
    """One command of Claude's memory tool, answered: `result` is the text
    to hand the model as the tool result. A write is applied (`version`
    the new one) or pending review (`proposal`)."""

    command: str
    result: str
    file: str | None = None
    version: int | None = None
    chars: int | None = None
    warning: str | None = None
    proposal: int | None = None
    files: list[str] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def pending(self) -> bool:
        return self.proposal is not None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ClaudeMemoryResult:
        return cls(command=data["command"], result=data["result"], file=data.get("file"),
                   version=data.get("version"), chars=data.get("chars"), warning=data.get("warning"),
                   proposal=data.get("proposal"), files=list(data.get("files", [])), raw=data)


# --- the rest of the agent routes (search entries, tools, conditional context) -------------------------


@dataclass(frozen=True)
class SearchEntry:
    """A log entry in full, as a search hit's `entry` names it (re-scanned:
    a part a scanner rule catches reads [BLOCKED: rule])."""

    entry: int
    session: int
    role: str
    content: str
    created_at: datetime | None
    blocked: list[str]
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SearchEntry:
        return cls(entry=data["entry"], session=data["session"], role=data["role"], content=data["content"],
                   created_at=_time(data.get("created_at")), blocked=list(data.get("blocked", [])), raw=data)


@dataclass(frozen=True)
class Tool:
    """One of the agent's registered tools (the auto-generated tool section)."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Tool:
        return cls(name=data["name"], description=data.get("description") or "",
                   parameters=dict(data.get("parameters") or {}))


@dataclass(frozen=True)
class Unchanged:
    """The context is still the one `etag` names (the server answered 304):
    keep using it."""

    etag: str


@dataclass(frozen=True)
class FileVersion:
    """One version of the agent's own file: when, from what source, why,
    how long (never its text: only the current version is served)."""

    version: int
    created_at: datetime | None
    source: str
    reason: str
    chars: int
    current: bool

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FileVersion:
        return cls(version=data["version"], created_at=_time(data.get("created_at")), source=data["source"],
                   reason=data.get("reason", ""), chars=data["chars"], current=bool(data.get("current")))
# --- notes (memory_note) ---------------------------------------------------------------


@dataclass(frozen=True)
class NoteSaved:
    """A note appended to a session log (role `note`)."""

    entry: int
    session: int
    created_at: datetime | None
    redacted: int
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> NoteSaved:
        return cls(entry=data["entry"], session=data["session"], created_at=_time(data.get("created_at")),
                   redacted=int(data.get("redacted", 0)), raw=data)


@dataclass(frozen=True)
class Note:
    """One of the pair's recent notes, as `notes()` reads them."""

    entry: int
    session: int
    text: str
    created_at: datetime | None
    blocked: list[str]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Note:
        return cls(entry=data["entry"], session=data["session"], text=data["text"],
                   created_at=_time(data.get("created_at")), blocked=list(data.get("blocked", [])))
