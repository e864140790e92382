"""gunicorn settings for MemoryHub (the Dockerfile and docker-compose.yml use
this file; every value can be overridden by environment).

gthread workers: each worker serves GUNICORN_THREADS requests at once, so a
slow client or a slow query holds one thread, not a whole worker. The worker
class (memoryhub.server) adds read/write timeouts per connection and JSON
error bodies. Request limits sit above the app's own (MEMORYHUB_MAX_URL_BYTES,
MEMORYHUB_MAX_HEADER_BYTES, MEMORYHUB_MAX_HEADER_COUNT in settings.py), so
the app answers over-long requests with its JSON 414/431.
"""

import os

bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
worker_class = "memoryhub.server.MemoryHubWorker"
threads = int(os.environ.get("GUNICORN_THREADS", "4"))
# A worker that stops heartbeating this long is restarted. With gthread a
# slow request does not stop the heartbeat; the database's statement timeout
# (10 s) bounds requests.
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "30"))
graceful_timeout = int(os.environ.get("GUNICORN_GRACEFUL_TIMEOUT", "30"))
keepalive = int(os.environ.get("GUNICORN_KEEPALIVE", "5"))
# gunicorn's maximum request line; the app's URL limit is 8000 bytes.
limit_request_line = 8190
# Twice the app's limits (100 headers, 8000 bytes each).
limit_request_fields = 200
limit_request_field_size = 16380
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", "10000"))
max_requests_jitter = int(os.environ.get("GUNICORN_MAX_REQUESTS_JITTER", "1000"))
accesslog = os.environ.get("GUNICORN_ACCESS_LOG", "-")
# Paths without query strings (they carry end users' references and search
# text); MEMORYHUB_ACCESS_LOG_QUERY_STRINGS=1 logs them (memoryhub.accesslog).
logger_class = "memoryhub.accesslog.GunicornLogger"
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")


def child_exit(server, worker):  # noqa: ARG001 - gunicorn's hook signature
    """With several workers, /metrics sums every worker's samples from files in
    PROMETHEUS_MULTIPROC_DIR (docker-compose sets it on a tmpfs, empty at each
    start). A worker that exits leaves its files; marking it dead drops its
    live gauges while its counters and histograms still count."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)
