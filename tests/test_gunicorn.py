"""gunicorn as deployed (gunicorn.conf.py, memoryhub.server): clients that
send half a request and stall do not stall the server, and over-long
requests get the JSON error body whether the app or gunicorn refuses them."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
THREADS = 2


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def gunicorn(**settings: str) -> Iterator[int]:
    """gunicorn with gunicorn.conf.py on a free port, with these variables."""
    port = free_port()
    env = {**os.environ, "GUNICORN_BIND": f"127.0.0.1:{port}", "WEB_CONCURRENCY": "1",
           "GUNICORN_THREADS": str(THREADS), "GUNICORN_IO_TIMEOUT": "2", "GUNICORN_ACCESS_LOG": "/dev/null",
           **settings}
    process = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py",
                                "memoryhub.wsgi:application"], cwd=ROOT, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None:
                    pytest.fail(f"gunicorn did not start: {process.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
                time.sleep(0.2)
        yield port
    finally:
        process.terminate()
        process.wait(30)


@pytest.fixture(scope="module")
def server() -> Iterator[int]:
    with gunicorn() as port:
        yield port


def get(port: int, path: str, timeout: float = 30) -> tuple[int, bytes, str]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers={"Host": "localhost"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read(), response.headers["Content-Type"]
    except urllib.error.HTTPError as error:
        return error.code, error.read(), error.headers["Content-Type"]


def test_clients_that_stall_mid_request_do_not_stall_the_server(server):
    stalled = []
    for _ in range(THREADS * 2):  # more than the worker has threads
        sock = socket.create_connection(("127.0.0.1", server))
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Never-Finished: ")
        stalled.append(sock)
    try:
        # Without read timeouts every thread waits on a stalled client for as
        # long as it stays connected, and this request never gets a thread.
        status, body, _ = get(server, "/healthz", timeout=30)
    finally:
        for sock in stalled:
            sock.close()
    assert (status, body) == (200, b"ok")


def test_clients_that_stall_mid_body_do_not_stall_the_server(server):
    """A form POST whose body never completes: Django's CSRF check reads the
    body, so each such client holds a thread inside the app until the read
    times out."""
    stalled = []
    for _ in range(THREADS * 2):
        sock = socket.create_connection(("127.0.0.1", server))
        sock.sendall(b"POST /login/ HTTP/1.1\r\nHost: localhost\r\nCookie: csrftoken=" + b"a" * 32 + b"\r\n"
                     b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\nusername=")
        stalled.append(sock)
    try:
        status, body, _ = get(server, "/healthz", timeout=30)
    finally:
        for sock in stalled:
            sock.close()
    assert (status, body) == (200, b"ok")


def test_a_url_over_the_apps_limit_gets_the_apps_json_414(server):
    status, body, content_type = get(server, "/api/v1/context?user=" + "a" * 8050)
    assert status == 414 and content_type == "application/json"
    assert json.loads(body)["error"]["code"] == "uri_too_long"


def test_a_request_line_over_gunicorns_limit_gets_json_too(server):
    with socket.create_connection(("127.0.0.1", server), timeout=10) as sock:
        sock.sendall(b"GET /api/v1/context?user=" + b"a" * 9000 + b" HTTP/1.1\r\nHost: localhost\r\n\r\n")
        answer = b""
        while chunk := sock.recv(4096):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 414") and b"Content-Type: application/json" in head
    assert json.loads(body)["error"]["code"] == "uri_too_long"


def test_with_several_workers_metrics_count_every_workers_requests(tmp_path):
    """docker-compose runs several workers and sets PROMETHEUS_MULTIPROC_DIR:
    each worker writes its samples there and a scrape (any worker) sums them.
    Without it, a scrape would show only the requests its own worker served."""
    from prometheus_client import CollectorRegistry, multiprocess

    requests = 40
    with gunicorn(WEB_CONCURRENCY="2", PROMETHEUS_MULTIPROC_DIR=str(tmp_path)) as port:
        for _ in range(requests):
            assert get(port, "/healthz")[0] == 200
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=str(tmp_path))  # type: ignore[no-untyped-call]
    labels = {"route": "healthz", "method": "GET", "status": "2xx"}
    assert registry.get_sample_value("memoryhub_http_request_duration_seconds_count", labels) == requests
