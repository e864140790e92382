"""The web servers' access logs keep paths, not query strings (which carry
end users' references and search text): gunicorn as deployed
(gunicorn.conf.py) and uvicorn as `make run` starts it, each a real
process on 127.0.0.1; MEMORYHUB_ACCESS_LOG_QUERY_STRINGS=1 turns them back on."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from memoryhub import accesslog
from tests.test_gunicorn import ROOT, free_port, gunicorn

SECRET = "cust-q8z4"
SEARCH = "needle7781"
PATH = f"/api/v1/context?user={SECRET}&q={SEARCH}"
REFERER = f"http://127.0.0.1/agents/bot/files/USER.md/history/?user={SECRET}"


def _get(port: int, path: str) -> int:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}",
                                     headers={"Host": "localhost", "Referer": REFERER})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code


def _wait_for(path: Path, text: str) -> str:
    for _ in range(100):
        content = path.read_text() if path.exists() else ""
        if text in content:
            return content
        time.sleep(0.1)
    return path.read_text() if path.exists() else ""


@pytest.mark.parametrize("query_strings", [False, True])
def test_gunicorn_logs_the_path_without_its_query_string_unless_told(tmp_path, query_strings):
    log = tmp_path / "access.log"
    with gunicorn(GUNICORN_ACCESS_LOG=str(log),
                  **{accesslog.SETTING: "1" if query_strings else "0"}) as port:
        assert _get(port, PATH) == 401
    content = _wait_for(log, "/api/v1/context")
    assert "GET /api/v1/context" in content and " 401 " in content
    assert (SECRET in content, SEARCH in content) == (query_strings, query_strings), content
    assert "/agents/bot/files/USER.md/history/" in content  # the referer, without its query


@pytest.mark.parametrize("query_strings", [False, True])
def test_uvicorn_as_make_run_starts_it_logs_the_path_only_unless_told(tmp_path, query_strings):
    port = free_port()
    out = tmp_path / "uvicorn.log"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "memoryhub.settings", "PYTHONPATH": str(ROOT),
           accesslog.SETTING: "1" if query_strings else "0"}
    with out.open("w") as sink:
        process = subprocess.Popen([sys.executable, "-m", "uvicorn", "memoryhub.asgi:application", "--host",
                                    "127.0.0.1", "--port", str(port)], cwd=ROOT, env=env, stdout=sink,
                                   stderr=subprocess.STDOUT)
        try:
            for _ in range(150):
                try:
                    if _get(port, "/healthz"):
                        break
                except OSError:
                    if process.poll() is not None:
                        pytest.fail(f"uvicorn did not start: {out.read_text()[-2000:]}")
                    time.sleep(0.2)
            assert _get(port, PATH) == 401
            content = _wait_for(out, '"GET /api/v1/context')
        finally:
            process.terminate()
            process.wait(30)
    assert '"GET /api/v1/context' in content and " 401" in content
    assert (SECRET in content, SEARCH in content) == (query_strings, query_strings), content


@pytest.mark.parametrize(("line", "expected"), [
    ("GET /a?user=x HTTP/1.1", "GET /a HTTP/1.1"),
    ("GET /a HTTP/1.1", "GET /a HTTP/1.1"),
    ("POST http://h/a?b=c#f HTTP/1.1", "POST http://h/a HTTP/1.1"),
])
def test_a_request_line_loses_only_its_query(line, expected):
    assert accesslog.request_line_without_query(line) == expected
