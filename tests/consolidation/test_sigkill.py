"""A worker process SIGKILLed in the middle of a run: no partial proposal,
and the run is finished later through the lease and the sweep (the broker
alone would lose the message on filesystem:// and hold it for an hour on
Redis)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from celery.contrib.testing.worker import start_worker
from celery.signals import task_postrun
from django.conf import settings as django_settings
from django.db import connection
from django.utils import timezone

from consolidation import services
from consolidation.models import ConsolidationRun, RunStatus
from memoryhub.celery import app as celery_app
from memoryhub.models import AgentSession, LogEntry, Proposal
from tests.factories import AgentFactory
from tests.live import database_url_for_subprocess
from tests.openai_server import OpenAIServer

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

BASE_DIR = Path(django_settings.BASE_DIR)


@pytest.fixture
def queue(settings: Any) -> Iterator[str]:
    name = f"test-sigkill-{uuid.uuid4().hex[:8]}"
    settings.MEMORYHUB_CONSOLIDATION_QUEUE = name
    yield name
    with celery_app.connection_for_write() as conn:
        conn.default_channel.queue_purge(name)


@pytest.fixture
def worker_process(queue: str, openai_server: OpenAIServer) -> Iterator[subprocess.Popen[bytes]]:
    env = {
        **os.environ,
        "DATABASE_URL": database_url_for_subprocess(),
        "OPENAI_BASE_URL": openai_server.url,
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_TIMEOUT": "120",
        "DJANGO_LOG_LEVEL": "WARNING",
    }
    celery = BASE_DIR / ".venv" / "bin" / "celery"
    command = [str(celery) if celery.exists() else sys.executable, *([] if celery.exists() else ["-m", "celery"]),
               "-A", "memoryhub", "worker", "--pool=solo", "-Q", queue, "--loglevel=INFO",
               "--without-heartbeat", "--without-mingle", "--without-gossip", "-n", f"{queue}@%h"]
    with tempfile.TemporaryFile() as output:
        process = subprocess.Popen(command, cwd=BASE_DIR, env=env, stdout=output, stderr=subprocess.STDOUT)
        try:
            yield process
        finally:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=10)
            output.seek(0)
            sys.stdout.write(output.read().decode(errors="replace")[-4000:])  # shown only if the test fails


def _close_db(**_: Any) -> None:
    connection.close()


def wait_for(predicate: Callable[[], Any], *, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"Timed out after {timeout} s waiting for {what}.")


def test_a_worker_killed_mid_run_leaves_no_proposal_and_the_sweep_gets_the_run_finished(
    settings: Any, queue: str, openai_server: OpenAIServer, worker_process: subprocess.Popen[bytes]
) -> None:
    settings.OPENAI_BASE_URL = openai_server.url
    settings.OPENAI_API_KEY = "sk-test"
    agent = AgentFactory(consolidation_backend="llm")
    session = AgentSession.objects.create(agent=agent, user_ref="dana", ended_at=timezone.now())
    note = LogEntry.objects.create(session=session, agent=agent, user_ref="dana", role="note",
                                   content="CI runs on GitHub Actions")
    good = json.dumps({"operations": [{"op": "add", "file": "MEMORY.md", "text": "CI runs on GitHub Actions",
                                       "reason": "The agent noted it.", "evidence": [note.pk]}]})
    openai_server.reply(good, delay=120)  # the first worker dies waiting for this
    openai_server.reply(good)

    run, _ = services.trigger_run(agent=agent, user_ref="dana")  # dispatched on commit to the subprocess
    openai_server.wait_for_requests(1, timeout=60)
    run.refresh_from_db()
    assert (run.status, run.attempts) == (RunStatus.RUNNING, 1)

    worker_process.send_signal(signal.SIGKILL)
    worker_process.wait(timeout=10)

    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING and not Proposal.objects.exists()

    # The lease runs out (made short here), the sweep re-queues the run
    # and a fresh worker finishes it.
    ConsolidationRun.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    swept = services.sweep_expired_runs()
    assert swept.requeued == [run.pk]
    task_postrun.connect(_close_db, weak=False)
    try:
        with start_worker(celery_app, pool="solo", queues=[queue], perform_ping_check=False, loglevel="WARNING",
                          shutdown_timeout=30):
            wait_for(lambda: ConsolidationRun.objects.filter(pk=run.pk, status=RunStatus.SUCCEEDED).exists(),
                     timeout=30, what="the re-queued run to succeed")
    finally:
        task_postrun.disconnect(_close_db)

    run.refresh_from_db()
    assert (run.status, run.attempts, run.error) == (RunStatus.SUCCEEDED, 2, "")
    [proposal] = Proposal.objects.all()
    assert list(run.proposals.all()) == [proposal]
    assert proposal.proposed_content == "- CI runs on GitHub Actions\n"
    assert proposal.base_version == 0 and proposal.rationale[0]["evidence"] == [note.pk]
    assert len(openai_server.requests) == 2
