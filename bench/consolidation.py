"""Benchmark: how many sessions per second does one worker process consolidate?

Seeds 200 (agent, user) pairs with 5 ended sessions of 20 log entries each
(a realistic mix: chat, tool output, user directives and preferences, agent
notes, a few in German, Spanish and French) through the services, queues one
heuristic run per pair through the gate, then starts ONE Celery worker
process (`--pool=solo`) and measures, from the database, the time between
the first run's start and the last run's finish:

    sessions/s = sessions consolidated / that time

It also prints runs/s, the proposals made, the worker's CPU time (sessions
per CPU-second: the figure a loaded machine does not move much), and the
language detector's load time and memory. With --quality it also prints
the scenario suites' recall, precision and safety counts (team, dev and
held-out histories, heuristic and scripted llm). A benchmark, not a test:
it asserts nothing about timings.

    .venv/bin/python bench/consolidation.py [--pairs 200] [--sessions 5] [--entries 20] [--quality]

With no DATABASE_URL it uses a fresh SQLite database and the filesystem
broker in a temporary directory; a caller's DATABASE_URL and REDIS_URL are
used as given (use a disposable database and a Redis db of its own).
See docs/benchmarks.md for the figures.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

# One session: 20 entries, like an agent's working session. Placeholders
# vary the facts per pair and session so that runs are not all alike.
SESSION = [
    ("user", "Morning! Can you look at the failing build for {project}?"),
    ("assistant", "Sure, checking the CI logs for {project} now."),
    ("tool", "ci.log: 312 tests, 2 failed (test_{n}_sync, test_{n}_retry) in 41.2s"),
    ("assistant", "Two tests fail; both touch the retry logic."),
    ("user", "From now on, run the linter before you push anything."),
    ("assistant", "Will do."),
    ("note", "The {project} repo uses pytest {n} and ruff"),
    ("tool", "ruff check: 3 files changed, 0 errors"),
    ("user", "I prefer email for routine updates."),
    ("assistant", "Noted: email for routine updates."),
    ("user", "For urgent things I prefer a phone call."),
    ("note", "Staging for {project} listens on port {port}"),
    ("user", "Remember that I'm on vacation until Friday."),
    ("assistant", "Enjoy the break!"),
    ("tool", "deploy.sh: staging deploy finished in 93s"),
    ("user", "Ich bevorzuge kurze Antworten."),
    ("assistant", "Alles klar, kurze Antworten."),
    ("note", "Deploys of {project} happen on Fridays"),
    ("user", "Thanks, that fixed it!"),
    ("assistant", "Great. Anything else?"),
]
PROJECTS = ["atlas", "borealis", "cobalt", "dynamo", "ember", "fjord", "granite", "harbor"]

SEED = r"""
import sys
import django
django.setup()
from memoryhub import services
from memoryhub.models import Workspace

pairs, sessions, entries = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
template = SESSION_PLACEHOLDER
projects = PROJECTS_PLACEHOLDER
workspace, _ = Workspace.objects.get_or_create(slug="bench", defaults={"name": "Bench"})
agents = [services.create_agent(workspace=workspace, slug=f"bench-{i}", name=f"Bench {i}", actor=services.SYSTEM)
          for i in range(pairs // 10 or 1)]
for p in range(pairs):
    agent = agents[p % len(agents)]
    user_ref = f"user-{p}"
    for s in range(sessions):
        session = services.start_session(agent=agent, user_ref=user_ref)
        rows = [
            {"role": role, "content": text.format(project=projects[(p + s) % len(projects)], n=p % 9 + 1,
                                                  port=5400 + p)}
            for role, text in (template * (entries // len(template) + 1))[:entries]
        ]
        services.append_log(session=session, entries=rows)
        services.end_session(session=session)
print(len(agents))
"""

TRIGGER = r"""
import django
django.setup()
from consolidation import services
print(len(services.run_gate()))
"""

MEASURE = r"""
import json
import django
django.setup()
from django.db.models import Count, Max, Min
from consolidation.models import ConsolidationRun
from memoryhub.models import Proposal
runs = ConsolidationRun.objects.all()
by_status = dict(runs.values_list("status").annotate(n=Count("id")))
span = runs.aggregate(first=Min("started_at"), last=Max("finished_at"))
print(json.dumps({
    "by_status": by_status,
    "active": runs.filter(status__in=["queued", "running"]).count(),
    "first": span["first"].timestamp() if span["first"] else None,
    "last": span["last"].timestamp() if span["last"] else None,
    "proposals": Proposal.objects.count(),
    "errors": list(runs.filter(status="failed").values_list("error", flat=True)[:3]),
}))
"""


LINGUA = r"""
import resource, time
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * resource.getpagesize() / 1e6
import django
django.setup()
from consolidation import language
before, started = rss(), time.perf_counter()
language.detector()
# Models load per language on first use: one text per script loads them all.
for text in ["Remember that I live in Lisbon, please.", "Запомни, что я предпочитаю короткие ответы.",
             "覚えておいて：電話が好きです。", "请记住我喜欢简短的回答。", "짧은 답변을 선호합니다.",
             "أفضل الردود القصيرة."]:
    language._lingua(text)
loaded, grown = time.perf_counter() - started, rss() - before
texts = ["Ich bevorzuge kurze Antworten.", "Preferisco le risposte brevi.", "覚えておいて：電話が好きです。"] * 300
started = time.perf_counter()
for text in texts:
    language._lingua(text)
per = (time.perf_counter() - started) / len(texts) * 1000
print(f"language detector (lingua, {len(language.DETECTED)} languages, low-accuracy mode): built and first "
      f"detection in {loaded:.2f} s, +{grown:.0f} MB resident; {per:.2f} ms per short entry")
"""


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def settle(pid: int, timeout: float = 60) -> float:
    """Wait until a freshly started process stops burning CPU (imports, app
    set-up); return its CPU time then."""
    deadline = time.monotonic() + timeout
    last = cpu_seconds(pid)
    while time.monotonic() < deadline:
        time.sleep(1.0)
        now = cpu_seconds(pid)
        if now - last < 0.05:
            return now
        last = now
    return last


def quality(env: dict[str, str]) -> None:
    """The scenario suites' figures, as their aggregate tests print them."""
    for target in ("tests/consolidation/scenarios/test_scenarios.py", "tests/consolidation/heldout"):
        done = subprocess.run([str(BIN / "python"), "-m", "pytest", target, "-q", "-s", "-p", "no:cacheprovider",
                               "-k", "recall or held_out"], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                              capture_output=True, text=True, timeout=3600)
        for line in done.stdout.splitlines():
            if " histories, recall " in line:
                print(line)


def run_checked(args: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        sys.exit(f"{' '.join(args[:3])} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--sessions", type=int, default=5)
    parser.add_argument("--entries", type=int, default=20)
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument("--quality", action="store_true",
                        help="also print the scenario suites' recall, precision and safety counts (runs pytest)")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="mh-bench-consolidation-"))
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "memoryhub.settings", "MEMORYHUB_VAR_DIR": str(tmp),
           "PYTHONPATH": str(ROOT), "DJANGO_LOG_LEVEL": "WARNING"}
    env.setdefault("DATABASE_URL", f"sqlite:///{tmp / 'bench.sqlite3'}")
    python = str(BIN / "python")
    worker: subprocess.Popen[bytes] | None = None
    try:
        run_checked([python, "manage.py", "migrate", "--noinput"], env)
        seed = SEED.replace("SESSION_PLACEHOLDER", repr(SESSION)).replace("PROJECTS_PLACEHOLDER", repr(PROJECTS))
        started = time.monotonic()
        run_checked([python, "-c", seed, str(args.pairs), str(args.sessions), str(args.entries)], env)
        print(f"seeded {args.pairs} pairs × {args.sessions} sessions × {args.entries} entries "
              f"in {time.monotonic() - started:.1f} s")
        log = (tmp / "worker.log").open("wb")
        worker = subprocess.Popen(
            [str(BIN / "celery"), "-A", "memoryhub", "worker", "--pool=solo", "--concurrency=1",
             "--loglevel=WARNING", "--without-gossip", "--without-mingle", "--without-heartbeat"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        # The worker's CPU time is the figure the machine's load does not
        # move much (wall-clock is shared with whatever else runs): read it
        # once the worker has started up and gone idle, and at the end.
        idle = settle(worker.pid)
        queued = int(run_checked([python, "-c", TRIGGER], env))
        print(f"the gate queued {queued} runs")
        import json

        deadline = time.monotonic() + 3600
        while True:
            state = json.loads(run_checked([python, "-c", MEASURE], env))
            if state["active"] == 0 or time.monotonic() > deadline:
                break
            if worker.poll() is not None:
                sys.exit(f"the worker died; see {tmp / 'worker.log'}")
            time.sleep(2)
        busy = cpu_seconds(worker.pid) - idle
        elapsed = state["last"] - state["first"]
        sessions = queued * args.sessions
        print(f"one worker process (--pool=solo), heuristic backend, {platform.python_implementation()} "
              f"{platform.python_version()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}, "
              f"database {env['DATABASE_URL'].split(':', 1)[0]}")
        print(f"runs: {state['by_status']}; proposals made: {state['proposals']}")
        if state["errors"]:
            print("failed runs, e.g.:", *state["errors"], sep="\n  ")
        print(f"{sessions} sessions ({sessions * args.entries} log entries) in {elapsed:.1f} s: "
              f"{sessions / elapsed:.1f} sessions/s, {queued / elapsed:.1f} runs/s (wall clock)")
        print(f"worker CPU {busy:.1f} s: {sessions / busy:.1f} sessions per CPU-second "
              "(target ≥ 40 sessions/s; wall clock adds SQLite commits, broker polling and whatever else "
              "the machine runs)")
        print(run_checked([python, "-c", LINGUA], env))
        if args.quality:
            quality(env)
    finally:
        if worker is not None and worker.poll() is None:
            os.killpg(worker.pid, signal.SIGTERM)
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
