#!/usr/bin/env bash
# Development runtime: the web server on 127.0.0.1:$PORT (default 8000; uvicorn serving
# memoryhub.asgi: Django and the MCP endpoint at /mcp/, reloading on code and
# template changes) with a Celery worker and Celery beat beside it. `make run` installs, migrates and seeds
# first, then execs this. Ctrl-C (or SIGTERM) stops all three; if any one of
# them exits, the others are stopped too, so a crash is never left half-running.
#
# With no DATABASE_URL / REDIS_URL set this uses SQLite and Celery's
# filesystem transport under var/ (see memoryhub/settings.py).
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=$ROOT/.venv/bin
HOST=127.0.0.1
# `make run PORT=8080` (or PORT in the environment) when 8000 is taken.
PORT=${PORT:-8000}
if ! [[ $PORT =~ ^[0-9]+$ ]] || ((PORT < 1 || PORT > 65535)); then
    echo "error: PORT must be a port number from 1 to 65535, not '$PORT'." >&2
    exit 2
fi
if (exec 3<>"/dev/tcp/$HOST/$PORT") 2>/dev/null; then
    echo "error: something already listens on $HOST:$PORT; stop it or choose another port: make run PORT=8080" >&2
    exit 1
fi
BASE_URL="http://$HOST:$PORT"
STOP_TIMEOUT=15

if [[ ! -x $BIN/python ]]; then
    echo "error: $BIN/python is missing; run 'make run' (it installs first)." >&2
    exit 1
fi

export DJANGO_DEBUG=1
export DJANGO_SETTINGS_MODULE=memoryhub.settings
export PYTHONUNBUFFERED=1
# celery is started from .venv/bin: make sure `-A memoryhub` imports from here.
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"

pids=()
names=()

# Each process gets its own session (and so its own process group): the
# terminal's Ctrl-C reaches only this script, which then stops each group in
# order, including uvicorn's reload child.
# (Without util-linux's setsid, e.g. on macOS, they share ours and Ctrl-C
# reaches them directly; stopping still works.)
if command -v setsid >/dev/null 2>&1; then
    SETSID=(setsid)
else
    SETSID=()
fi
start() {
    local name=$1
    shift
    "${SETSID[@]}" "$@" &
    pids+=("$!")
    names+=("$name")
}

alive() {
    kill -0 -- "-$1" 2>/dev/null || kill -0 "$1" 2>/dev/null
}

stopping=0
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    local status=$?
    trap - EXIT
    # A second Ctrl-C while stopping kills at once.
    trap 'stopping=2' INT TERM
    stopping=1
    ((${#pids[@]})) || exit "$status"
    echo
    echo "Stopping ${names[*]} ..."
    local i pid
    for pid in "${pids[@]}"; do
        kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    done
    local deadline=$((SECONDS + STOP_TIMEOUT))
    while ((SECONDS < deadline && stopping == 1)); do
        local running=0
        for pid in "${pids[@]}"; do
            if alive "$pid"; then running=1; fi
        done
        ((running)) || break
        sleep 0.2
    done
    for i in "${!pids[@]}"; do
        pid=${pids[$i]}
        if alive "$pid"; then
            echo "${names[$i]} (pid $pid) did not stop; killing it." >&2
            kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
        fi
    done
    wait 2>/dev/null || true
    echo "Stopped."
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

start "celery-worker" "$BIN/celery" -A memoryhub worker --pool=solo --loglevel=INFO
start "celery-beat" "$BIN/celery" -A memoryhub beat --loglevel=INFO
# A template edit restarts the server too: Django's cached template loader
# only notices changes under runserver's own autoreloader.
start "web" "$BIN/uvicorn" memoryhub.asgi:application --host "$HOST" --port "$PORT" \
    --reload --reload-dir memoryhub --reload-dir consolidation --reload-dir reviews --reload-dir templates \
    --reload-include '*.html'

web_pid=${pids[2]}

# Print the banner once the server answers, so it is not buried in start-up logs.
for _ in $(seq 1 150); do
    if (exec 3<>"/dev/tcp/$HOST/$PORT") 2>/dev/null; then
        break
    fi
    alive "$web_pid" || break
    sleep 0.2
done

alive "$web_pid" && cat <<EOF

================================================================================
 MemoryHub is running (DEBUG on; Ctrl-C stops the server, worker and beat)

   Review console   $BASE_URL/
   Django admin     $BASE_URL/django-admin/
   API docs         $BASE_URL/api/docs/
   OpenAPI schema   $BASE_URL/api/schema/
   MCP endpoint     $BASE_URL/mcp/  (Authorization: Bearer <agent key>)

 Demo logins (workspace "demo"; local demo data only):
   admin       demo-admin-pass
   reviewer    demo-reviewer-pass
   reviewer2   demo-reviewer2-pass
   auditor     demo-auditor-pass
================================================================================

EOF

status=0
wait -n "${pids[@]}" || status=$?
for i in "${!pids[@]}"; do
    if ! alive "${pids[$i]}"; then
        echo "${names[$i]} exited (status $status); stopping the rest." >&2
    fi
done
exit "$status"
