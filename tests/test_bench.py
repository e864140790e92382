"""Every benchmark under bench/ runs, at tiny sizes, in every test run: a
benchmark that no longer starts (an import that moved, a service whose
signature changed) fails here instead of on the day someone wants figures.
Each runs as a subprocess exactly as a person starts it, against a database
of its own (a fresh SQLite file in its temporary directory; for the two
PostgreSQL-only ones a scratch database created and dropped here), and must
exit 0 and print its figures. Nothing about timings is asserted.

Sizes come from each benchmark's own options; MEMORYHUB_BENCH_SMOKE=1 is
set as well, for a size that has no option (bench/console.py's queues).
A new file under bench/ without a row here fails
`test_every_benchmark_has_a_smoke_run`."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.conf import settings

from tests.conftest import needs_postgres

ROOT = Path(settings.BASE_DIR)
BENCH = ROOT / "bench"


@dataclass(frozen=True)
class Smoke:
    args: tuple[str, ...]
    prints: str  # a line of the figures the benchmark exists to print
    postgres: bool = False
    marks: tuple[pytest.MarkDecorator, ...] = ()


SMOKES: dict[str, Smoke] = {
    "consolidation.py": Smoke(("--pairs", "2", "--sessions", "5", "--entries", "3"), "sessions/s",
                              marks=(pytest.mark.worker,)),
    "console.py": Smoke(("--rounds", "2"), "| dashboard |"),
    "context_api.py": Smoke(("--seconds", "0.3", "--warmup", "0", "--concurrency", "2", "--workers", "1",
                             "--threads", "2"), "ratio to GET /api/v1/tools"),
    "embedding.py": Smoke(("--rounds", "1", "--texts", "20"), "int8/float32"),
    "entries.py": Smoke(("--pairs", "3", "--rounds", "1"), "| add + remove |"),
    "load.py": Smoke(("--agents", "2", "--seconds", "1", "--workers", "1", "--threads", "2"), "errors 0",
                     postgres=True),
    "mcp_load.py": Smoke(("--clients", "2", "--seconds", "1"), "errors 0", postgres=True),
    "scanner.py": Smoke(("--iterations", "5", "--chars", "500"), "scan_all"),
    # The dev split: a smoke run has no business printing held-out rates.
    "scanner_holdout.py": Smoke(("--split", "dev"), "per class"),
    "scanner_wordings.py": Smoke((), "extraction:"),
    # The semantic index written directly, the path the 1,000,000-entry run takes.
    "search.py": Smoke(("--entries", "200", "--pairs", "100", "--queries", "20", "--direct-vectors"),
                       "WRITTEN DIRECTLY", postgres=True),
}


def test_every_benchmark_has_a_smoke_run() -> None:
    assert sorted(p.name for p in BENCH.glob("*.py") if not p.name.startswith("_")) == sorted(SMOKES)


@pytest.fixture
def scratch_postgres(request: pytest.FixtureRequest) -> Iterator[str]:
    """A PostgreSQL database of the benchmark's own, on the server the tests
    use, dropped afterwards."""
    needs_postgres()
    import psycopg

    db = settings.DATABASES["default"]
    name = f"mh_bench_smoke_{os.getpid()}_{request.node.callspec.id.replace('.py', '')}"
    params = {"host": db.get("HOST") or "127.0.0.1", "port": db.get("PORT") or 5432, "user": db.get("USER") or "",
              "password": db.get("PASSWORD") or ""}
    with psycopg.connect(dbname="postgres", autocommit=True, **params) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')
    auth = params["user"] + (f":{params['password']}" if params["password"] else "")
    try:
        yield f"postgres://{auth}@{params['host']}:{params['port']}/{name}"
    finally:
        with psycopg.connect(dbname="postgres", autocommit=True, **params) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.mark.parametrize("name", [pytest.param(n, marks=s.marks, id=n) for n, s in SMOKES.items()])
def test_the_benchmark_runs_at_tiny_sizes(name: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    smoke = SMOKES[name]
    # The caller's database and broker are never a benchmark's: they migrate
    # and seed whatever DATABASE_URL names.
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "MIGRATE_DATABASE_URL")}
    env.update(MEMORYHUB_BENCH_SMOKE="1", MEMORYHUB_VAR_DIR=str(tmp_path), PYTHONUNBUFFERED="1")
    if smoke.postgres:
        env["DATABASE_URL"] = request.getfixturevalue("scratch_postgres")
    (ROOT / "var").mkdir(exist_ok=True)  # bench/load.py writes its server log there
    done = subprocess.run([sys.executable, str(BENCH / name), *smoke.args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    assert smoke.prints in done.stdout, output[-4000:]
