"""No markup from data, ever.

An agent controls its user references, its files, its session logs and
external ids, its tools' descriptions, the reasons and rationale of what it
proposes; staff control names, comments and reasons. With htmx, markup is
behaviour: an element carrying `hx-post` and `hx-trigger="load"` that
reaches a page is sent with the reviewer's CSRF header. Here every such
field carries HTML, htmx attributes, a script and an image with an error
handler — written through the services as an agent or admin would, so only
what the scanner lets through — and every console page and every htmx
answer, GET and POST, must render them inert: the raw payload never
appears, and every text or attribute carrying it sits inside an
`hx-disable` container.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser
from typing import Any

import pytest
from django.test import Client

from memoryhub import services
from memoryhub.models import LogEntry, MemoryFile, Proposal, ProposalStatus, Role, Source, Strategy
from reviews import once
from tests.factories import AgentFactory, WorkspaceFactory, staff

pytestmark = pytest.mark.django_db

# Not a CSRF token's alphabet ([a-zA-Z0-9]): "PWN" alone turned up inside a
# random token about once in 4,000 pages and failed the run.
MARK = "PWN_"
HTMX = {"HTTP_HX_REQUEST": "true"}
# Attributes that hold URLs we build (the data in them is URL-encoded) are
# not text containers; every other attribute is.
URL_ATTRS = frozenset({"href", "action", "hx-get", "hx-post", "src"})
VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track",
                  "wbr"})
# A browser ends an open <p> at any of these, which would move the rest of a
# "protected" paragraph outside its hx-disable: the checker refuses them.
BLOCKS = frozenset({"address", "article", "aside", "blockquote", "details", "div", "dl", "fieldset", "figure",
                    "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hgroup", "hr", "main", "nav",
                    "ol", "p", "pre", "section", "table", "ul"})
# What must never appear in a response as it was written.
RAW = ("<div hx-post", "hx-vals='{\"action\":\"approve\"}'", "<script>document", "<img src=x", 'onerror="document',
       "<b hx-get")


def payloads(target: int) -> dict[str, str]:
    htmx = (f'<div hx-post="/proposals/{target}/" hx-vals=\'{{"action":"approve"}}\' hx-trigger="load">'
            f"{MARK}-htmx</div>")
    script = f"<script>document.title='{MARK}-script'</script>"
    image = f"<img src=x onerror=\"document.title='{MARK}-img'\">"
    bold = f'<b hx-get="/" hx-trigger="load">{MARK}-b</b>'
    return {"htmx": htmx, "script": script, "image": image, "bold": bold, "all": f"{htmx} {script} {image} {bold}"}


class InertChecker(HTMLParser):
    """Walks a response as a tree (refusing markup a browser would
    restructure) and records every text or attribute carrying MARK that no
    hx-disable element contains."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, bool]] = []
        self.problems: list[str] = []
        self.carriers = 0

    def _inside_disabled(self) -> bool:
        return any(disabled for _tag, disabled in self.stack)

    def _where(self) -> str:
        return "/".join(tag for tag, _ in self.stack[-4:])

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._open(tag, attrs, closes=tag in VOID)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._open(tag, attrs, closes=True)

    def _open(self, tag: str, attrs: list[tuple[str, str | None]], *, closes: bool) -> None:
        if tag in BLOCKS and self.stack and self.stack[-1][0] == "p":
            self.problems.append(f"<{tag}> inside <p> at {self._where()}: a browser closes the <p> first")
        disabled = any(name == "hx-disable" for name, _ in attrs)
        for name, value in attrs:
            if value and MARK in value and name not in URL_ATTRS:
                self.carriers += 1
                if not (disabled or self._inside_disabled()):
                    self.problems.append(f"{name}= of <{tag}> at {self._where()} carries data outside hx-disable")
        if not closes:
            self.stack.append((tag, disabled))

    def handle_endtag(self, tag: str) -> None:
        if self.stack and self.stack[-1][0] == tag:
            self.stack.pop()
            return
        self.problems.append(f"</{tag}> does not close <{self.stack[-1][0] if self.stack else ''}> at "
                             f"{self._where()}")
        while self.stack and self.stack.pop()[0] != tag:
            pass

    def handle_data(self, data: str) -> None:
        if MARK not in data:
            return
        self.carriers += 1
        # <title> is raw text to a browser: it never holds elements.
        if self.stack and self.stack[-1][0] == "title":
            return
        if not self._inside_disabled():
            self.problems.append(f"text at {self._where()} outside hx-disable: {data.strip()[:80]!r}")


def assert_inert(response: Any, *, carries: bool = True) -> None:
    body = response.content.decode()
    where = f"{response.request['REQUEST_METHOD']} {response.request['PATH_INFO']}?{response.request['QUERY_STRING']}"
    for raw in RAW:
        assert raw not in body, f"{where}: raw {raw!r} in the response"
    checker = InertChecker()
    checker.feed(body)
    checker.close()
    assert checker.problems == [], f"{where}: {checker.problems}"
    if carries:
        assert checker.carriers, f"{where}: no payload on this page, so it proves nothing"


@pytest.fixture
def world() -> dict[str, Any]:
    workspace = WorkspaceFactory(slug="acme")
    agent = AgentFactory(workspace=workspace, slug="bot", strategy=Strategy.FULL)
    admin = staff(workspace, Role.ADMIN, username="ada")
    admin2 = staff(workspace, Role.ADMIN, username="abe")
    reviewer = staff(workspace, Role.REVIEWER, username="rita")
    # Staff names are typed by admins: one carries a payload too.
    p0 = payloads(0)
    odd = staff(workspace, Role.REVIEWER, username=p0["image"])

    services.write_memory(agent=agent, kind="SOUL.md", content="I help.")
    target = services.propose_change(agent=agent, kind="SOUL.md", content="I help kindly.",
                                     source=Source.CONSOLIDATION, reason="kinder")
    p = payloads(target.pk)
    user = p["htmx"] + " " + p["script"]
    assert len(user) <= 255
    body = "\n".join(["# Notes", p["htmx"], p["script"], p["image"], p["bold"], "- plain line"])

    services.update_agent(agent=agent, settings={"name": p["htmx"], "description": p["all"]}, actor=admin)
    for kind in ("ABOUT.md", "TOOLS.md"):
        services.write_memory(agent=agent, kind=kind, content=body, reason=p["all"])
    for kind in ("USER.md", "MEMORY.md"):
        services.write_memory(agent=agent, kind=kind, user_ref=user, content="- first\n", reason=p["bold"])
        services.write_memory(agent=agent, kind=kind, user_ref=user, content=body, reason=p["all"])
    session = services.start_session(agent=agent, user_ref=user, external_id=p["all"])
    entries = services.append_log(session=session, entries=[
        {"role": "user", "content": p["all"]}, {"role": "note", "content": p["htmx"]}])
    services.replace_tools(agent=agent, actor=admin, tools=[{
        "name": "lookup", "description": p["all"],
        "parameters": {"type": "object", "properties": {"q": {"type": "string", "description": p["htmx"]}}},
    }])
    services.issue_agent_key(agent=agent, actor=admin, name=p["bold"])

    consolidation = services.propose_change(
        agent=agent, kind="MEMORY.md", user_ref=user, content=body + "\n- " + p["image"],
        source=Source.CONSOLIDATION, reason=p["all"],
        rationale=[{"kind": p["bold"], "summary": p["all"], "reason": p["htmx"],
                    "evidence": [entries[0].pk, entries[1].pk, 999999]}],
    )
    revision = services.revise_proposal(proposal_id=consolidation.pk, reviewer=reviewer,
                                        content=body + "\n- " + p["script"], comment=p["all"])
    # Agent-scoped: the consolidation proposal above is superseded, so a second one to decide.
    about = services.propose_change(agent=agent, kind="ABOUT.md", content=body + "\n" + p["image"],
                                    source=Source.CONSOLIDATION, reason=p["htmx"])
    rejected = services.propose_change(agent=agent, kind="TOOLS.md", content=body + "\nx", source=Source.ADMIN,
                                       author_user=admin, reason=p["script"])
    services.reject_proposal(proposal_id=rejected.pk, reviewer=odd, comment=p["all"])
    rollback = services.propose_rollback(agent=agent, kind="USER.md", user_ref=user, to_version=1, actor=reviewer,
                                         reason=p["all"])
    approved_user = services.propose_change(agent=agent, kind="USER.md", user_ref=user, content=body + "\n- ok",
                                            source=Source.AGENT, author_agent=agent, reason=p["image"])
    services.approve_proposal(proposal_id=approved_user.pk, reviewer=odd, comment=p["all"])
    services.withhold_file(agent=agent, kind="MEMORY.md", user_ref=user, actor=reviewer, reason=p["all"])
    release = services.request_release(agent=agent, kind="MEMORY.md", user_ref=user, actor=reviewer,
                                       reason=p["all"])
    decided = services.update_agent(agent=agent, settings={"limit_soul": "3000"}, actor=admin, reason=p["htmx"])
    services.approve_change(change_id=decided.change.pk, actor=admin2, comment=p["all"])
    limit = services.update_agent(agent=agent, settings={"limit_memory": "9000"}, actor=admin, reason=p["all"])
    # Files near their cap, so the dashboard lists the user's.
    services.update_agent(agent=agent, settings={"limit_about": "200", "limit_user": "200"}, actor=admin)
    return {
        "agent": agent, "admin": admin, "admin2": admin2, "reviewer": reviewer, "odd": odd, "user": user, "p": p,
        "target": target, "revision": revision, "about": about, "rejected": rejected, "rollback": rollback,
        "approved": approved_user, "session": session, "release": release, "limit": limit.change,
        "entries": entries,
    }


def login(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def history(world: dict[str, Any], kind: str) -> str:
    from django.utils.http import urlencode

    base = f"/agents/{world['agent'].slug}/files/{kind}/history/"
    return base if kind in ("SOUL.md", "ABOUT.md", "TOOLS.md") else f"{base}?{urlencode({'user': world['user']})}"


def blame(world: dict[str, Any], kind: str) -> str:
    return history(world, kind).replace("/history/", "/blame/")


def test_every_console_page_renders_agent_data_inert(world):
    slug, user = world["agent"].slug, world["user"]
    proposals = [world[k] for k in ("target", "revision", "about", "rejected", "rollback", "approved")]
    proposals += list(Proposal.objects.filter(status=ProposalStatus.SUPERSEDED))
    for viewer in (world["reviewer"], world["odd"], world["admin"]):
        client = login(viewer)
        pages = [
            "/", f"/?agent={slug}", "/?status=stale", "/agents/", f"/agents/{slug}/",
            f"/agents/{slug}/preview/", "/audit/", "/dashboard/", "/changes/", "/direct-writes/",
            f"/sessions/{world['session'].pk}/",
        ]
        for proposal in proposals:
            pages += [f"/proposals/{proposal.pk}/", f"/proposals/{proposal.pk}/?view=unified&context=all"]
        for kind in ("ABOUT.md", "TOOLS.md", "USER.md", "MEMORY.md"):
            sep = "&" if "?" in history(world, kind) else "?"
            pages += [history(world, kind), history(world, kind) + f"{sep}a=1&b=2&context=all",
                      history(world, kind) + f"{sep}rollback=1", blame(world, kind)]
        for path in pages:
            response = client.get(path)
            assert response.status_code == 200, path
            assert_inert(response)
        # Echoes of what was typed into a filter or a URL.
        for path, params in [("/", {"user": user}), ("/audit/", {"actor": world["p"]["all"], "agent": slug}),
                             (f"/agents/{slug}/preview/", {"user": user, "strategy": "full"}),
                             ("/direct-writes/", {"since": world["p"]["htmx"], "agent": slug})]:
            assert_inert(client.get(path, params))


def test_every_htmx_fragment_renders_agent_data_inert(world):
    client = login(world["reviewer"])
    slug, user = world["agent"].slug, world["user"]
    fragments = [
        ("/", {"agent": slug}, "proposal-list"),
        (f"/proposals/{world['revision'].pk}/", {"view": "unified"}, "diff"),
        (f"/proposals/{world['revision'].pk}/", {"context": "all"}, "diff"),
        (f"/agents/{slug}/preview/", {"user": user, "strategy": "full"}, "preview"),
        ("/audit/", {"agent": slug}, "results"),
        ("/changes/", {}, "pending-changes"),
        ("/changes/", {}, "decided-changes"),
        ("/direct-writes/", {"agent": slug}, "direct-writes"),
    ]
    for kind in ("ABOUT.md", "USER.md", "MEMORY.md"):
        sep = "&" if "?" in history(world, kind) else "?"
        fragments += [(history(world, kind), {}, "timeline"),
                      (history(world, kind) + f"{sep}a=1&b=2", {}, "version-diff")]
    for path, params, target in fragments:
        response = client.get(path, params, HTTP_HX_TARGET=target, **HTMX)
        assert response.status_code == 200, path
        assert "<html" not in response.content.decode(), path
        assert_inert(response)
    for badge in ("/queue/badge/", "/changes/badge/"):
        assert_inert(client.get(badge, **HTMX), carries=False)


def posts(world: dict[str, Any]) -> list[tuple[Any, str, dict[str, Any]]]:
    """(who, where, form) for every console POST, each carrying a payload."""
    p, slug, user = world["p"], world["agent"].slug, world["user"]
    agent_page = f"/agents/{slug}/"
    tools = json.dumps([{"name": "lookup", "description": p["all"], "parameters": {}}])
    return [
        # Decisions that succeed and decisions refused, echoing what was typed.
        (world["reviewer"], f"/proposals/{world['target'].pk}/", {"action": "approve", "comment": p["all"]}),
        (world["admin"], f"/proposals/{world['about'].pk}/", {"action": "reject", "comment": p["all"]}),
        (world["reviewer"], f"/proposals/{world['revision'].pk}/", {"action": "approve", "comment": p["all"]}),
        (world["admin"], f"/proposals/{world['revision'].pk}/", {"action": "reject", "comment": ""}),
        (world["admin"], f"/proposals/{world['revision'].pk}/",
         {"action": "edit", "content": world["revision"].proposed_content, "comment": p["all"]}),
        (world["admin"], f"/proposals/{world['rollback'].pk}/", {"action": "withdraw", "comment": p["all"]}),
        (world["reviewer"], f"/proposals/{world['rollback'].pk}/", {"action": "withdraw", "comment": p["all"]}),
        (world["reviewer"], f"/proposals/{world['revision'].pk}/", {"action": p["htmx"]}),
        # Batches: refused whole (the typed reason code echoed) and decided item by item, claims.
        (world["reviewer"], "/queue/bulk/", {"ids": [world["target"].pk], "action": "approve",
                                             "reason_code": p["all"], "comment": p["all"]}),
        (world["reviewer"], "/queue/bulk/", {"ids": [world["revision"].pk, world["about"].pk], "action": "reject",
                                             "reason_code": "duplicate", "comment": p["all"]}),
        (world["reviewer"], f"/proposals/{world['revision'].pk}/", {"action": "claim"}),
        # File history: refused and done.
        (world["reviewer"], history(world, "USER.md"), {"action": "rollback", "reason": p["all"]}),
        (world["reviewer"], history(world, "USER.md"), {"action": "release", "reason": p["all"]}),
        (world["reviewer"], history(world, "ABOUT.md"), {"action": "withhold", "reason": p["all"]}),
        (world["reviewer"], history(world, "MEMORY.md"), {"action": "release", "reason": p["all"]}),
        # Changes.
        (world["reviewer"], "/changes/", {"change": world["release"].pk, "action": "approve", "comment": p["all"]}),
        (world["admin2"], "/changes/", {"change": world["limit"].pk, "action": "reject", "comment": ""}),
        (world["admin"], "/changes/", {"change": world["limit"].pk, "action": "withdraw", "comment": p["all"]}),
        # Direct writes.
        (world["reviewer"], "/direct-writes/", {"action": "withhold", "agent": slug, "file": "TOOLS.md", "user": "",
                                                "version": "1", "reason": "", "row": "1"}),
        (world["reviewer"], "/direct-writes/", {"action": "rollback", "agent": slug, "file": "USER.md", "user": user,
                                                "version": "2", "reason": p["all"], "row": "1"}),
        # The agent page, including the consolidation notice of the issue.
        (world["reviewer"], agent_page + "consolidate/", {"user": user}),
        (world["admin"], agent_page + "persona/", {"kind": "ABOUT.md", "content": p["all"] + " " * 300,
                                      "reason": p["bold"]}),
        (world["admin"], agent_page + "persona/", {"kind": "SOUL.md", "content": p["all"],
                                      "reason": p["bold"]}),
        (world["admin"], agent_page + "tools/", {"tools": tools}),
        (world["admin"], agent_page + "tools/", {"tools": tools[:-3] + p["all"]}),
        (world["admin"], agent_page + "policies/", {"field": "x", "reason": p["all"],
                                      **{f: str(getattr(world["agent"], f)) for f in services.POLICY_FIELDS},
                                      "limit_user": "9999"}),
        (world["admin"], agent_page + "keys/", {"name": p["bold"]}),
        (world["admin"], "/agents/", {"slug": "bad slug", "name": p["htmx"], "workspace": world["agent"].workspace_id}),
    ]


@pytest.mark.parametrize("htmx", [True, False], ids=["htmx", "plain"])
def test_every_post_answer_renders_agent_data_inert(world, htmx):
    for who, path, form in posts(world):
        client = login(who)
        form = {**form, once.FIELD: once.token_for(who)}  # what the form's page renders
        response = client.post(path, form, **(HTMX if htmx else {}))
        assert response.status_code in (200, 302, 400, 403, 409, 422), (path, form.get("action"), response.status_code)
        if response.status_code == 302:
            response = client.get(response.url)  # the page carrying the message
            assert response.status_code == 200
        elif htmx and response.has_header("HX-Redirect"):
            response = client.get(response["HX-Redirect"])
        assert_inert(response, carries=False)


def test_the_consolidation_notice_shows_the_user_reference_as_text(world):
    response = login(world["reviewer"]).post(f"/agents/{world['agent'].slug}/consolidate/",
                                             {"user": world["user"]}, **HTMX)
    body = response.content.decode()
    assert response.status_code == 200 and "queued for &lt;div hx-post=" in body
    notice = body.split('<p class="notice" role="status" hx-disable>', 1)[1].split("</p>", 1)[0]
    assert "&lt;script&gt;document.title=" in notice
    assert_inert(response)
    assert Proposal.objects.get(pk=world["target"].pk).status == ProposalStatus.PENDING


def test_the_checker_itself_catches_live_markup_and_unprotected_text():
    """The test above proves something only if its checker fails on the
    markup it looks for."""
    def problems(html: str) -> list[str]:
        checker = InertChecker()
        checker.feed(html)
        return checker.problems

    assert problems(f"<main><p>{MARK}</p></main>")
    assert problems(f'<main><input value="{MARK}"></main>')
    assert problems(f"<main><p hx-disable>{MARK}<div>x</div></p></main>")
    assert problems("<main><p>x</div></main>")
    assert not problems(f'<main><p hx-disable>{MARK}</p><a href="/?u={MARK}">x</a><input value="{MARK}" hx-disable>'
                        "</main>")
    assert not problems(f"<title>{MARK}</title>")


def test_the_world_was_written_through_the_services(world):
    """The payloads reached the database as an agent or admin would put them."""
    user = world["user"]
    assert MemoryFile.objects.filter(user_ref=user).count() == 2
    assert LogEntry.objects.filter(user_ref=user).count() == 2
    assert world["agent"].tools.get().description == world["p"]["all"]
    assert "<div hx-post" in MemoryFile.objects.get(kind="ABOUT.md").content
