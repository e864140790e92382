"""Schemathesis over /api/schema/, in process: every operation of the live
OpenAPI schema is fuzzed (examples, coverage and fuzzing phases, positive
and negative cases) against the WSGI app with real credentials and seeded
data. Every answer must be a non-5xx the schema documents: status code,
content type, headers and body.

Agent routes are called with an agent key, staff routes with a reviewer's
personal token in the agent's workspace; every case is sent again with the
other kind of principal, which must be refused as documented (401/403).
The schema offers no OpenAPI links yet, so there is no stateful phase. Part of the generated path
parameters, queries and bodies are steered toward seeded objects, so the
positive paths run too, and every operation must answer 2xx at least once.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from consolidation import services as consolidation
from memoryhub import services
from memoryhub.models import LogRole, Role, Source, WritePolicy
from memoryhub.wsgi import application
from notifications import services as notify
from tests.factories import AgentFactory, ToolFactory, staff

STAFF_PREFIXES = ("/api/v1/proposals", "/api/v1/agents", "/api/v1/consolidation-runs", "/api/v1/changes",
                  "/api/v1/subjects", "/api/v1/webhooks")
# Operations only an admin may perform answer 2xx with the admin's token.
ADMIN_OPERATIONS = {("PATCH", "/api/v1/agents/{slug}"), ("GET", "/api/v1/subjects/{user_ref}/export"),
                    ("POST", "/api/v1/subjects/{user_ref}/erasure"),
                    ("GET", "/api/v1/webhooks"), ("POST", "/api/v1/webhooks"),
                    ("DELETE", "/api/v1/webhooks/{webhook_id}")}
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
USERS = ("alice", "bob@example.com")
AGENT_SLUG = "schema-agent"

# A fixed seed, derandomized Hypothesis and no example database: every run
# sends the same requests.
CONFIG = schemathesis.Config.from_dict({"seed": 20261101, "generation": {"database": "none"}})
schema = schemathesis.openapi.from_wsgi("/api/schema/", application, config=CONFIG)


@dataclass
class Seeded:
    agent_key: str = ""
    staff_token: str = ""
    admin_token: str = ""
    pools: dict[str, list[Any]] = field(default_factory=dict)
    statuses: Counter[int] = field(default_factory=Counter)


# The hooks below run while Hypothesis draws, long after import; the
# `seeded` fixture fills this in for the operation under test.
SEEDED = Seeded()


def seed_data() -> Seeded:
    agent = AgentFactory(slug=AGENT_SLUG)
    ToolFactory(agent=agent, name="lookup_order")
    for version in range(1, 4):
        services.write_memory(agent=agent, kind="SOUL.md", content=f"I am a patient support agent (v{version}).")
        services.write_memory(agent=agent, kind="ABOUT.md", content=f"Runs the help desk of a bike shop (v{version}).")
        services.write_memory(agent=agent, kind="TOOLS.md", content=f"lookup_order takes an order number (v{version}).")
        for user in USERS:
            services.write_memory(agent=agent, kind="USER.md", user_ref=user, content=f"- Name: {user} (v{version})")
            services.write_memory(agent=agent, kind="MEMORY.md", user_ref=user, content=f"- Rides model {version}")
    admin = staff(agent.workspace, Role.ADMIN)
    reviewer = staff(agent.workspace, Role.REVIEWER)

    def pending(batch: str) -> list[int]:
        # One file each, so deciding one proposal never makes another stale.
        return [
            services.propose_change(agent=agent, kind="MEMORY.md", user_ref=f"{batch}-{i}", content=f"- fact {i}",
                                    source=Source.ADMIN, author_user=admin, reason="seeded").pk
            for i in range(12)
        ]

    to_approve, to_reject = pending("approve"), pending("reject")
    # Claimed by the reviewer, to release.
    claimed = pending("claimed")
    for pk in claimed:
        services.claim_proposal(proposal_id=pk, actor=reviewer)
    own = services.propose_change(agent=agent, kind="SOUL.md", content="I am brisk.", source=Source.ADMIN,
                                  author_user=reviewer, reason="the reviewer's own: four-eyes").pk
    decided = services.propose_change(agent=agent, kind="ABOUT.md", content="Sells bikes.",
                                      source=Source.CONSOLIDATION)
    services.reject_proposal(proposal_id=decided.pk, reviewer=reviewer, comment="no")

    reviewed = AgentFactory(workspace=agent.workspace, slug="schema-reviewed", write_policy=WritePolicy.REVIEW)
    elsewhere = AgentFactory(slug="schema-elsewhere")
    hidden = services.propose_change(agent=elsewhere, kind="SOUL.md", content="Not yours.",
                                     source=Source.CONSOLIDATION)
    foreign = services.start_session(agent=elsewhere, user_ref="alice")

    open_sessions = [services.start_session(agent=agent, user_ref=user).pk for user in USERS * 3]
    logged = services.append_log(session=services.get_session(agent=agent, session_id=open_sessions[0]),
                                 entries=[{"role": "user", "content": "Call me Al; I ride a gravel bike now."}])
    foreign_entry = services.append_log(session=foreign, entries=[{"role": "user", "content": "Not yours."}])
    ended = services.start_session(agent=agent, user_ref="alice")
    services.end_session(session=ended)
    run, _ = consolidation.trigger_run(agent=agent, user_ref="alice", user=reviewer)
    foreign_run, _ = consolidation.trigger_run(agent=elsewhere, user_ref="alice")

    # Four-eyes (403), already decided (409), another workspace's (404).
    refused = [own, decided.pk, hidden.pk]
    # The reviewer's own proposals, to withdraw.
    mine = [services.propose_rollback(agent=agent, kind="MEMORY.md", user_ref=user, to_version=1, actor=reviewer,
                                      reason="seeded").pk for user in USERS]
    # Stale proposals, to rebase: each file moved on after its proposal.
    stale = []
    for i in range(6):
        services.write_memory(agent=agent, kind="USER.md", user_ref=f"stale-{i}", content="- likes tea\n- in Oslo\n")
        stale.append(services.propose_change(agent=agent, kind="USER.md", user_ref=f"stale-{i}",
                                             content="- likes green tea\n- in Oslo\n", source=Source.ADMIN,
                                             author_user=admin, reason="seeded").pk)
        services.write_memory(agent=agent, kind="USER.md", user_ref=f"stale-{i}", content="- likes tea\n- in Bergen\n")
    # Withheld files with a pending release each, requested by the admin: the reviewer decides them.
    changes = []
    for i in range(12):
        services.write_memory(agent=agent, kind="MEMORY.md", user_ref=f"held-{i}", content=f"- held {i}")
        services.withhold_file(agent=agent, kind="MEMORY.md", user_ref=f"held-{i}", actor=admin, reason="seeded")
        changes.append(services.request_release(agent=agent, kind="MEMORY.md", user_ref=f"held-{i}", actor=admin,
                                                reason="seeded").pk)
    for held in ("held-own", "held-free"):
        services.write_memory(agent=agent, kind="MEMORY.md", user_ref=held, content="- held")
        services.withhold_file(agent=agent, kind="MEMORY.md", user_ref=held, actor=reviewer, reason="seeded")
    own_change = services.request_release(agent=agent, kind="MEMORY.md", user_ref="held-own", actor=reviewer,
                                          reason="seeded").pk
    hooks = [notify.create_webhook(actor=admin, workspace=agent.workspace, url=f"https://hooks.example.com/{i}",
                                   events=["proposal.created"], secret="schema-webhook-secret")[0].pk
             for i in range(8)]
    foreign_hook = notify.create_webhook(actor=staff(elsewhere.workspace, Role.ADMIN), workspace=elsewhere.workspace,
                                         url="https://hooks.example.com/x", events=["run.failed"],
                                         secret="schema-webhook-secret")[0].pk
    _, agent_key = services.issue_agent_key(agent=agent, actor=services.SYSTEM)
    _, staff_token = services.issue_staff_token(user=reviewer)
    _, admin_token = services.issue_staff_token(user=admin)
    return Seeded(
        agent_key=agent_key,
        staff_token=staff_token,
        admin_token=admin_token,
        pools={
            # The first entries are the seeded agent and its objects; the
            # rest answer 400/403/404 (other policy, other workspace, decided).
            "slug": [agent.slug, agent.slug, reviewed.slug, elsewhere.slug],
            "proposal_id": [*to_approve[:2], *to_reject[:2], *refused],
            "proposal_id/approve": [*to_approve, *refused],
            "proposal_id/reject": [*to_reject, *refused],
            "proposal_id/withdraw": [*mine, *refused],
            "proposal_id/rebase": [*stale, *refused],
            "proposal_id/claim": [*to_approve, *refused],
            "proposal_id/unclaim": [*claimed, *refused],
            "change_id": changes[:6],
            "change_id/approve": changes[6:9],
            "change_id/reject": changes[9:],
            "change_id/withdraw": [own_change, changes[0]],
            "session_id": [*open_sessions[:2], ended.pk, foreign.pk],
            "session_id/log": open_sessions,
            "run_id": [run.pk, run.pk, foreign_run.pk],
            # Alice's entry (found with ?user=alice), and another agent's.
            "entry_id": [logged[0].pk, logged[0].pk, foreign_entry[0].pk],
            "user/{entry_id}": [USERS[0]],
            # Seeded end users, and one the workspace holds nothing about.
            "user_ref": [*USERS, "nobody"],
            "webhook_id": [*hooks, foreign_hook],
        },
    )


def _pool(context: Any, name: str) -> list[Any]:
    suffix = context.operation.path.rsplit("/", 1)[-1]
    return SEEDED.pools.get(f"{name}/{suffix}") or SEEDED.pools.get(name) or []


def _half_the_time(original: Any, steered: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.just(original), steered)


@schema.hook
def flatmap_path_parameters(context: Any, path_parameters: dict[str, Any] | None) -> st.SearchStrategy[Any]:
    """Point the path at seeded objects instead of random ids."""
    if not isinstance(path_parameters, dict):
        return st.just(path_parameters)
    steered = {name: st.sampled_from(pool) for name in path_parameters if (pool := _pool(context, name))}
    if not steered:
        return st.just(path_parameters)
    return _half_the_time(path_parameters, st.fixed_dictionaries(steered).map(lambda p: {**path_parameters, **p}))


def _with_user(query: dict[str, Any], user: str | None) -> dict[str, Any]:
    rest = {key: value for key, value in query.items() if key != "user"}
    return rest if user is None else {**rest, "user": user}


@schema.hook
def flatmap_query(context: Any, query: dict[str, Any] | None) -> st.SearchStrategy[Any]:
    """Name a seeded end user (or none, for the agent's own files); a pool
    "user/<last path segment>" narrows that to the user the path's objects
    belong to."""
    if not isinstance(query, dict) or "user" not in {p.name for p in context.operation.query}:
        return st.just(query)
    users = _pool(context, "user") or [*USERS, None]
    steered = st.sampled_from(users).map(lambda user: _with_user(query, user))
    if context.operation.path.endswith("{entry_id}"):
        # A log entry is found only with the user it belongs to; a random
        # user is already covered by the path's foreign and missing ids.
        return steered
    return _half_the_time(query, steered)


_PLAIN_TEXT = st.text(st.characters(min_codepoint=32, exclude_categories=["Cs"]), min_size=1, max_size=80)
_STEERED_BODIES: dict[str, Callable[[], st.SearchStrategy[Any]]] = {
    # Log entries must be non-blank text without control characters.
    "log": lambda: st.fixed_dictionaries({
        "entries": st.lists(
            st.fixed_dictionaries({"role": st.sampled_from(LogRole.values),
                                   "content": _PLAIN_TEXT.filter(str.strip)}),
            min_size=1, max_size=4,
        )
    }),
    # A rejection says why: a comment or one of the workspace's reason codes.
    "reject": lambda: st.one_of(st.fixed_dictionaries({"comment": _PLAIN_TEXT.filter(str.strip)}),
                                st.fixed_dictionaries({"reason_code": st.sampled_from(["duplicate", "outdated"])})),
    # Withdrawing takes an optional comment; an empty body is the common call.
    "withdraw": lambda: st.just({}),
    # Every seeded file has versions 1 to 3.
    "rollback": lambda: st.fixed_dictionaries({"version": st.sampled_from([1, 2]), "reason": _PLAIN_TEXT}),
}


@schema.hook
def before_add_examples(context: Any, examples: list[schemathesis.Case]) -> None:
    """File routes succeed only when slug, file, user (and version) all fit:
    one explicit example each makes sure their 200 is seen."""
    operation = context.operation
    if operation.path.endswith("/rollback"):
        examples.append(operation.Case(path_parameters={"slug": AGENT_SLUG, "file": "SOUL.md"},
                                       body={"version": 1, "reason": "Back to the first persona."},
                                       media_type="application/json"))
    if operation.path.endswith(("/withhold", "/release")):
        examples.append(operation.Case(path_parameters={"slug": AGENT_SLUG, "file": "MEMORY.md"},
                                       query={"user": "held-free" if operation.path.endswith("/release") else "alice"},
                                       body={"reason": "Seeded."}, media_type="application/json"))
    if operation.path.endswith("/erasure"):
        examples.append(operation.Case(path_parameters={"user_ref": "alice"}, body={"reason": "Seeded."},
                                       media_type="application/json"))
    if operation.path == "/api/v1/agents/{slug}" and operation.method.upper() == "PATCH":
        examples.append(operation.Case(path_parameters={"slug": AGENT_SLUG}, body={"strategy": "full"},
                                       media_type="application/json"))
    if operation.path.endswith("/entries"):
        # Every seeded MEMORY.md holds "- Rides model 3": one entry to change.
        body = {"post": {"text": "Rides a gravel bike now."},
                "patch": {"old_text": "Rides model", "new_text": "Rides a gravel bike."},
                "delete": {"old_text": "Rides model"}}[operation.method.lower()]
        examples.append(operation.Case(path_parameters={"file": "MEMORY.md"}, query={"user": USERS[0]}, body=body,
                                       media_type="application/json"))
    # A 2xx that needs a seeded slug and a valid body at once: an example,
    # so it never depends on the fuzzer's luck.
    if operation.path.endswith("/consolidate"):
        examples.append(operation.Case(path_parameters={"slug": AGENT_SLUG}, body={"user": USERS[1]},
                                       media_type="application/json"))
    if operation.path == "/api/v1/webhooks" and operation.method.upper() == "POST":
        examples.append(operation.Case(body={"url": "https://hooks.example.com/schema", "events": ["run.failed"]},
                                       media_type="application/json"))
    if operation.path == "/api/v1/memory/{file}" and operation.method.upper() == "PUT":
        # A 200 needs a seeded user, a file and a note the scanner passes at
        # once; after the rules of 2026.12.3 the fuzzer's draw no longer hit
        # that: one plain note, so the 200 never depends on its luck.
        examples.append(operation.Case(path_parameters={"file": "MEMORY.md"}, query={"user": USERS[0]},
                                       body={"content": "- Rides a gravel bike now."}, media_type="application/json"))
    if operation.path == "/api/v1/memory/claude-memory":
        # Claude's memory tool: its directory view, and one line added.
        examples.append(operation.Case(query={"user": USERS[0]}, body={"command": "view", "path": "/memories"},
                                       media_type="application/json"))
        examples.append(operation.Case(query={"user": USERS[0]}, media_type="application/json",
                                       body={"command": "insert", "path": "/memories/MEMORY.md", "insert_line": 0,
                                             "insert_text": "- Rides a gravel bike now."}))
    if operation.path == "/api/v1/memory/notes" and operation.method.upper() == "POST":
        # A note needs a seeded user with an open session and a note within
        # the 2,000 characters at once (the schema cannot state the bound).
        examples.append(operation.Case(body={"user": USERS[0], "text": "Rides a gravel bike now."},
                                       media_type="application/json"))
    if operation.path.endswith("/proposals/bulk"):
        # A 200 needs ids and a reason code at once (the service requires the
        # code; the schema cannot say so): one rejection by code. Items the
        # reviewer cannot decide are answered per item, inside the 200.
        examples.append(operation.Case(body={"ids": [1, 2], "action": "reject", "reason_code": "duplicate"},
                                       media_type="application/json"))
    if operation.path.endswith("/versions") and "{slug}" in operation.path:
        examples.append(operation.Case(path_parameters={"slug": AGENT_SLUG, "file": "MEMORY.md"},
                                       query={"user": USERS[0]}))
    if operation.path == "/api/v1/memory/{file}/versions":
        examples.append(operation.Case(path_parameters={"file": "MEMORY.md"}, query={"user": USERS[0]}))


@schema.hook
def flatmap_body(context: Any, body: Any) -> st.SearchStrategy[Any]:
    """Mix well-formed bodies into operations whose rules the schema does not
    state, so their success path is reached too."""
    steer = _STEERED_BODIES.get(context.operation.path.rsplit("/", 1)[-1])
    return st.just(body) if steer is None else _half_the_time(body, steer())


_IDEMPOTENCY_KEYS = itertools.count()


@schema.hook
def map_headers(context: Any, headers: dict[str, Any] | None) -> dict[str, Any] | None:
    """A client sends a new Idempotency-Key with each new request. Generated
    keys repeat across different bodies, which is answered 422
    `idempotency_key_reused` (tests/memoryhub/test_idempotency.py tests that
    answer) and would hide every success path of the write operations."""
    if isinstance(headers, dict) and "Idempotency-Key" in headers:
        return {**headers, "Idempotency-Key": f"schema-{next(_IDEMPOTENCY_KEYS)}"}
    return headers


@pytest.fixture
def seeded(scratch_queue: str) -> Iterator[Seeded]:
    # The WSGI calls run in this thread on the test's own connection, which
    # close_old_connections would close under pytest-django.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    # (tests/conftest.py clears the cache before each operation.)
    # Consolidation runs are dispatched on commit, to a scratch queue.
    try:
        SEEDED.__dict__.update(seed_data().__dict__)
        yield SEEDED
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@pytest.fixture
def answered_2xx(request: pytest.FixtureRequest, seeded: Seeded) -> Iterator[None]:
    """Checked after the run: an operation that never answered 2xx was only
    fuzzed at its error paths, which proves little about its answers."""
    failed_before = request.session.testsfailed
    yield
    if request.session.testsfailed == failed_before and not any(200 <= code < 300 for code in seeded.statuses):
        pytest.fail(f"{request.node.name}: no 2xx answer among {dict(sorted(seeded.statuses.items()))}")


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("answered_2xx")
@schema.parametrize()
@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_every_operation_answers_as_its_schema_says(case: schemathesis.Case, seeded: Seeded) -> None:
    secret = seeded.staff_token if case.path.startswith(STAFF_PREFIXES) else seeded.agent_key
    if (case.operation.method.upper(), case.operation.path) in ADMIN_OPERATIONS:
        secret = seeded.admin_token
    response = case.call_and_validate(headers={"Authorization": f"Bearer {secret}"}, checks=CHECKS)
    if case.method.upper() == case.operation.method.upper():  # not the coverage phase's OPTIONS/TRACE probes
        seeded.statuses[response.status_code] += 1
        # The other kind of principal: an agent key on a staff route, a staff
        # token on an agent route. Refused, as the schema documents it.
        wrong = seeded.agent_key if secret != seeded.agent_key else seeded.staff_token
        refused = case.call_and_validate(headers={"Authorization": f"Bearer {wrong}"}, checks=CHECKS)
        # A request malformed before anyone is asked who sends it (a NUL in the
        # URL, an unknown route) gets the same answer whoever sends it.
        assert refused.status_code in (401, 403) or refused.status_code == response.status_code in (400, 404), (
            case.operation.label, response.status_code, refused.status_code)
