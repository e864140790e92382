"""scripts/run_dev.sh (what `make run` execs): it serves on the port PORT
names (default 8000), refuses a PORT that is no port, and says so when the
port is taken — instead of a uvicorn traceback after the worker started."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings

ROOT = Path(settings.BASE_DIR)
SCRIPT = ROOT / "scripts" / "run_dev.sh"


def _env(tmp_path: Path, port: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    return {**env, "PORT": port, "MEMORYHUB_VAR_DIR": str(tmp_path),
            "DATABASE_URL": f"sqlite:///{tmp_path / 'dev.sqlite3'}"}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("port", ["abc", "0", "70000", "80 80"])
def test_it_refuses_a_port_that_is_no_port(tmp_path: Path, port: str) -> None:
    done = subprocess.run(["bash", str(SCRIPT)], env=_env(tmp_path, port), capture_output=True, text=True,
                          timeout=60, start_new_session=True)
    assert done.returncode == 2
    assert f"PORT must be a port number from 1 to 65535, not '{port}'" in done.stderr


def test_it_says_so_when_the_port_is_taken(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(["bash", str(SCRIPT)], env=_env(tmp_path, str(port)), capture_output=True, text=True,
                              timeout=60, start_new_session=True)
    assert done.returncode == 1
    assert f"something already listens on 127.0.0.1:{port}" in done.stderr


@pytest.mark.worker
def test_it_serves_on_the_port_port_names(tmp_path: Path) -> None:
    port = _free_port()
    log = (tmp_path / "run.log").open("w+")
    process = subprocess.Popen(["bash", str(SCRIPT)], env=_env(tmp_path, str(port)), stdout=log,
                               stderr=subprocess.STDOUT, start_new_session=True, cwd=ROOT)
    try:
        body = ""
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and process.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as answer:
                    body = answer.read().decode()
                    break
            except OSError:
                time.sleep(0.5)
        assert body == "ok", Path(log.name).read_text()[-3000:]
        deadline = time.monotonic() + 10
        while f"http://127.0.0.1:{port}/mcp/" not in Path(log.name).read_text() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert f"Review console   http://127.0.0.1:{port}/" in Path(log.name).read_text()
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log.close()
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0  # everything it started is stopped
