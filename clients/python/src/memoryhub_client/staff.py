"""The staff side a compliance team scripts: the review queue (list, read,
approve, reject with reason codes, decide in bulk), file history, pending
governance changes, and data subjects (export, erasure request).

    from memoryhub_client.staff import MemoryHubStaff

    with MemoryHubStaff("http://127.0.0.1:8000", token="mht_…") as staff:
        for proposal in staff.proposals(status="pending", agent="support-bot").results:
            staff.reject(proposal.id, reason_code="outdated")
        staff.request_erasure("cust-1042", reason="Subject request 12")

Authenticates with a personal token (`manage.py issue_token USERNAME`);
what it may do follows that person's role. Every rule (four-eyes, stale
proposals, reason codes) is the server's: a refusal raises the same
exceptions as the agent client (`PermissionDenied` with code `four_eyes`,
…). Calls are described once and sent by the agent client's transport, so
retries after Retry-After and connection errors behave the same.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import quote

import httpx

from memoryhub_client.client import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, AsyncMemoryHub, MemoryHub, _Call, _json
from memoryhub_client.models import _time


@dataclass(frozen=True)
class Proposal:
    """A proposed change to a memory file; `diff`, contents and rationale
    are in `raw` when it came from `proposal()` (the detail)."""

    id: int
    agent: str
    user: str | None
    file: str
    source: str
    status: str
    base_version: int
    created_at: datetime | None
    author: str
    reason: str
    risk: str
    diff: str = ""
    proposed_content: str = ""
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Proposal:
        return cls(id=data["id"], agent=data["agent"], user=data.get("user"), file=data["file"],
                   source=data["source"], status=data["status"], base_version=data["base_version"],
                   created_at=_time(data.get("created_at")), author=data.get("author", ""),
                   reason=data.get("reason", ""), risk=data.get("risk", ""), diff=data.get("diff", ""),
                   proposed_content=data.get("proposed_content", ""), raw=data)


@dataclass(frozen=True)
class ProposalPage:
    count: int
    results: list[Proposal]
    next: str | None = None
    previous: str | None = None


@dataclass(frozen=True)
class Decision:
    """A decided proposal: `status` approved (or pending, when a second
    approval is needed) or rejected; `version` the file version it made."""

    status: str
    version: int | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class BulkItem:
    id: int
    status: str | None
    error: dict[str, Any] | None


@dataclass(frozen=True)
class BulkResult:
    batch: str
    results: list[BulkItem]


@dataclass(frozen=True)
class Version:
    version: int
    content: str
    created_at: datetime | None
    author: str
    source: str
    reason: str
    approved_by: str | None
    proposal: int | None


@dataclass(frozen=True)
class Change:
    """A pending (or decided) governance change: a release, a weaker
    policy, an erasure — approved by a second person."""

    id: int
    kind: str
    status: str
    summary: str
    reason: str
    requested_by: str
    user: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Change:
        return cls(id=data["id"], kind=data["kind"], status=data["status"], summary=data.get("summary", ""),
                   reason=data.get("reason", ""), requested_by=data.get("requested_by", ""), user=data.get("user"),
                   raw=data)


@dataclass(frozen=True)
class Pending:
    """A call that recorded a change another person must approve (202)."""

    change: int
    status: str


def _page(response: httpx.Response) -> ProposalPage:
    data = _json(response)
    return ProposalPage(count=data["count"], results=[Proposal.from_json(p) for p in data["results"]],
                        next=data.get("next"), previous=data.get("previous"))


def _decision(response: httpx.Response) -> Decision:
    data = _json(response)
    return Decision(status=data["status"], version=data.get("version"), raw=data)


def _bulk(response: httpx.Response) -> BulkResult:
    data = _json(response)
    return BulkResult(batch=data["batch"], results=[
        BulkItem(id=item["id"], status=item.get("status"), error=item.get("error")) for item in data["results"]])


def _versions(response: httpx.Response) -> list[Version]:
    body = response.json()
    return [Version(version=v["version"], content=v["content"], created_at=_time(v.get("created_at")),
                    author=v.get("author", ""), source=v.get("source", ""), reason=v.get("reason", ""),
                    approved_by=v.get("approved_by"), proposal=v.get("proposal")) for v in body]


def _pending(response: httpx.Response) -> Pending:
    data = _json(response)
    return Pending(change=data["change"], status=data["status"])


def _workspace(workspace: str | None) -> dict[str, Any]:
    return {"workspace": workspace} if workspace else {}


class _StaffCalls:
    @staticmethod
    def proposals(status: str | None, agent: str | None, file: str | None, user: str | None, page: int,
                  page_size: int) -> _Call[ProposalPage]:
        params = {key: value for key, value in (("status", status), ("agent", agent), ("file", file),
                                                ("user", user)) if value is not None}
        return _Call("GET", "/api/v1/proposals", _page, params={**params, "page": page, "page_size": page_size})

    @staticmethod
    def proposal(proposal_id: int) -> _Call[Proposal]:
        return _Call("GET", f"/api/v1/proposals/{int(proposal_id)}", lambda r: Proposal.from_json(_json(r)))

    @staticmethod
    def approve(proposal_id: int, comment: str, reason_code: str,
                acknowledge_personal_data: bool) -> _Call[Decision]:
        return _Call("POST", f"/api/v1/proposals/{int(proposal_id)}/approve", _decision,
                     json={"comment": comment, "reason_code": reason_code,
                           "acknowledge_personal_data": acknowledge_personal_data})

    @staticmethod
    def reject(proposal_id: int, comment: str, reason_code: str) -> _Call[Decision]:
        return _Call("POST", f"/api/v1/proposals/{int(proposal_id)}/reject", _decision,
                     json={"comment": comment, "reason_code": reason_code})

    @staticmethod
    def decide_in_bulk(ids: Iterable[int], action: str, reason_code: str, comment: str) -> _Call[BulkResult]:
        return _Call("POST", "/api/v1/proposals/bulk", _bulk,
                     json={"ids": [int(i) for i in ids], "action": action, "reason_code": reason_code,
                           "comment": comment})

    @staticmethod
    def versions(agent: str, file: str, user: str | None) -> _Call[list[Version]]:
        return _Call("GET", f"/api/v1/agents/{quote(agent, safe='')}/files/{quote(file, safe='')}/versions",
                     _versions, params={"user": user} if user is not None else {})

    @staticmethod
    def changes(status: str | None) -> _Call[list[Change]]:
        return _Call("GET", "/api/v1/changes", lambda r: [Change.from_json(c) for c in r.json()],
                     params={"status": status} if status else {})

    @staticmethod
    def decide_change(change_id: int, action: str, comment: str) -> _Call[Change]:
        return _Call("POST", f"/api/v1/changes/{int(change_id)}/{action}", lambda r: Change.from_json(_json(r)),
                     json={"comment": comment})

    @staticmethod
    def request_erasure(user: str, reason: str, workspace: str | None) -> _Call[Pending]:
        return _Call("POST", f"/api/v1/subjects/{quote(user, safe='')}/erasure", _pending,
                     params=_workspace(workspace), json={"reason": reason})

    @staticmethod
    def export_subject(user: str, workspace: str | None) -> _Call[dict[str, Any]]:
        return _Call("GET", f"/api/v1/subjects/{quote(user, safe='')}/export", _json, params=_workspace(workspace))


class MemoryHubStaff:
    """The staff API, synchronously, with a personal token."""

    def __init__(self, base_url: str, token: str, *, timeout: float = DEFAULT_TIMEOUT,
                 max_retries: int = DEFAULT_MAX_RETRIES, http_client: httpx.Client | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._hub = MemoryHub(base_url, token, timeout=timeout, max_retries=max_retries, http_client=http_client,
                              sleep=sleep)

    def __enter__(self) -> MemoryHubStaff:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._hub.close()

    def proposals(self, *, status: str | None = "pending", agent: str | None = None, file: str | None = None,
                  user: str | None = None, page: int = 1, page_size: int = 50) -> ProposalPage:
        return self._hub._run(_StaffCalls.proposals(status, agent, file, user, page, page_size))

    def proposal(self, proposal_id: int) -> Proposal:
        return self._hub._run(_StaffCalls.proposal(proposal_id))

    def approve(self, proposal_id: int, *, comment: str = "", reason_code: str = "",
                acknowledge_personal_data: bool = False) -> Decision:
        return self._hub._run(_StaffCalls.approve(proposal_id, comment, reason_code, acknowledge_personal_data))

    def reject(self, proposal_id: int, *, comment: str = "", reason_code: str = "") -> Decision:
        """Say why: a `comment`, a `reason_code` from the workspace's list, or both."""
        return self._hub._run(_StaffCalls.reject(proposal_id, comment, reason_code))

    def decide_in_bulk(self, ids: Iterable[int], *, action: str, reason_code: str, comment: str = "") -> BulkResult:
        return self._hub._run(_StaffCalls.decide_in_bulk(ids, action, reason_code, comment))

    def versions(self, agent: str, file: str, *, user: str | None = None) -> list[Version]:
        """Every version of one of an agent's files, oldest first."""
        return self._hub._run(_StaffCalls.versions(agent, file, user))

    def changes(self, *, status: str | None = "pending") -> list[Change]:
        return self._hub._run(_StaffCalls.changes(status))

    def approve_change(self, change_id: int, *, comment: str = "") -> Change:
        return self._hub._run(_StaffCalls.decide_change(change_id, "approve", comment))

    def reject_change(self, change_id: int, *, comment: str) -> Change:
        return self._hub._run(_StaffCalls.decide_change(change_id, "reject", comment))

    def request_erasure(self, user: str, *, reason: str, workspace: str | None = None) -> Pending:
        """Record an erasure of end user `user`: a change a second admin approves."""
        return self._hub._run(_StaffCalls.request_erasure(user, reason, workspace))

    def export_subject(self, user: str, *, workspace: str | None = None) -> dict[str, Any]:
        """Everything held about end user `user` in the workspace, as the server's JSON document."""
        return self._hub._run(_StaffCalls.export_subject(user, workspace))


class AsyncMemoryHubStaff:
    """The staff API for asyncio code; the same methods as `MemoryHubStaff`."""

    def __init__(self, base_url: str, token: str, *, timeout: float = DEFAULT_TIMEOUT,
                 max_retries: int = DEFAULT_MAX_RETRIES, http_client: httpx.AsyncClient | None = None,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self._hub = AsyncMemoryHub(base_url, token, timeout=timeout, max_retries=max_retries,
                                   http_client=http_client, sleep=sleep)

    async def __aenter__(self) -> AsyncMemoryHubStaff:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._hub.aclose()

    async def proposals(self, *, status: str | None = "pending", agent: str | None = None, file: str | None = None,
                        user: str | None = None, page: int = 1, page_size: int = 50) -> ProposalPage:
        return await self._hub._run(_StaffCalls.proposals(status, agent, file, user, page, page_size))

    async def proposal(self, proposal_id: int) -> Proposal:
        return await self._hub._run(_StaffCalls.proposal(proposal_id))

    async def approve(self, proposal_id: int, *, comment: str = "", reason_code: str = "",
                      acknowledge_personal_data: bool = False) -> Decision:
        return await self._hub._run(_StaffCalls.approve(proposal_id, comment, reason_code,
                                                        acknowledge_personal_data))

    async def reject(self, proposal_id: int, *, comment: str = "", reason_code: str = "") -> Decision:
        return await self._hub._run(_StaffCalls.reject(proposal_id, comment, reason_code))

    async def decide_in_bulk(self, ids: Iterable[int], *, action: str, reason_code: str,
                             comment: str = "") -> BulkResult:
        return await self._hub._run(_StaffCalls.decide_in_bulk(ids, action, reason_code, comment))

    async def versions(self, agent: str, file: str, *, user: str | None = None) -> list[Version]:
        return await self._hub._run(_StaffCalls.versions(agent, file, user))

    async def changes(self, *, status: str | None = "pending") -> list[Change]:
        return await self._hub._run(_StaffCalls.changes(status))

    async def approve_change(self, change_id: int, *, comment: str = "") -> Change:
        return await self._hub._run(_StaffCalls.decide_change(change_id, "approve", comment))

    async def reject_change(self, change_id: int, *, comment: str) -> Change:
        return await self._hub._run(_StaffCalls.decide_change(change_id, "reject", comment))

    async def request_erasure(self, user: str, *, reason: str, workspace: str | None = None) -> Pending:
        return await self._hub._run(_StaffCalls.request_erasure(user, reason, workspace))

    async def export_subject(self, user: str, *, workspace: str | None = None) -> dict[str, Any]:
        return await self._hub._run(_StaffCalls.export_subject(user, workspace))


__all__ = ["AsyncMemoryHubStaff", "BulkItem", "BulkResult", "Change", "Decision", "MemoryHubStaff", "Pending",
           "Proposal", "ProposalPage", "Version"]
