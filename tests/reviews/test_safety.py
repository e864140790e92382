"""Small things that let a reviewer be misled: links built from user refs,
spreadsheet formulas in exports, browser features nobody asked for."""

from __future__ import annotations

import csv
import io

import pytest
from django.test import Client

from memoryhub import services
from memoryhub.models import Source

pytestmark = pytest.mark.django_db


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_proposal_page_links_the_history_of_exactly_its_users_file(agent, reviewer):
    tricky = "bob&user=alice"
    services.write_memory(agent=agent, kind="MEMORY.md", user_ref="alice", content="- alice's")
    proposal = services.propose_change(agent=agent, kind="MEMORY.md", user_ref=tricky, content="- bob's",
                                       source=Source.CONSOLIDATION)
    page = signed_in(reviewer).get(f"/proposals/{proposal.pk}/").content.decode()
    assert f"/agents/{agent.slug}/files/MEMORY.md/history/?user=bob%26user%3Dalice" in page
    assert "?user=bob&amp;user=alice" not in page and "?user=bob&user=alice" not in page


@pytest.mark.parametrize("start", ["=", "+", "-", "@", "\t", "\r"])
def test_no_exported_csv_cell_starts_a_formula(agent, reviewer, start):
    services.record_event(action=f"{start}cmd|' /C calc'!A0", agent=agent, user_ref=f"{start}SUM(1)",
                          summary=f"{start}HYPERLINK(\"http://x\")")
    response = signed_in(reviewer).get("/audit/?format=csv")
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    header, cells = rows[0], [cell for row in rows[1:] for cell in row]
    assert header[0] == "id"
    assert not [cell for cell in cells if cell.startswith(("=", "+", "-", "@", "\t", "\r"))]


def test_every_response_carries_a_permissions_policy(reviewer):
    for response in (Client().get("/login/"), signed_in(reviewer).get("/"), Client().get("/api/v1/context")):
        policy = response["Permissions-Policy"]
        assert "camera=()" in policy and "geolocation=()" in policy and "microphone=()" in policy
