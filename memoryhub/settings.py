"""MemoryHub settings.

Every setting comes from an environment variable. The defaults are the
no-setup ones `make run` uses (SQLite and Celery's filesystem transport under
var/); production sets DATABASE_URL, REDIS_URL and the DJANGO_* variables.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent


def env(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return int(value) if value else default


def env_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    return float(value) if value else default


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in env(name, default).split(",") if item.strip()]


VAR_DIR = Path(env("MEMORYHUB_VAR_DIR", str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env_bool("DJANGO_DEBUG", default=False)


def _local_secret_key() -> str:
    """A random key kept under var/ for machines that set none, so no
    well-known key ever signs a session. Production sets DJANGO_SECRET_KEY."""
    path = VAR_DIR / "secret_key"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = env("DJANGO_SECRET_KEY") or _local_secret_key()

ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "simple_history",
    "django_htmx",
    "template_partials",
    "axes",
    "memoryhub",
    "consolidation",
    "reviews",
    "notifications",
]

MIDDLEWARE = [
    # Outermost: times every answer, refusals included (/metrics).
    "memoryhub.metrics.MetricsMiddleware",
    # First: over-long URLs and headers are refused before any other work.
    "memoryhub.middleware.RequestLimitsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "reviews.middleware.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "simple_history.middleware.HistoryRequestMiddleware",
    # Last, as django-axes asks: turns a locked-out sign-in into its 429 page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "memoryhub.urls"
WSGI_APPLICATION = "memoryhub.wsgi.application"
ASGI_APPLICATION = "memoryhub.asgi.application"
# Threads per web process serving Django's views (memoryhub/asgi.py): each
# keeps its database connection between requests, as a gthread worker does.
MEMORYHUB_WSGI_THREADS = env_int("MEMORYHUB_WSGI_THREADS", 4)
# MCP over HTTP (memoryhub/mcp_server.py). A `GET /mcp/` event stream holds a
# connection for as long as it is open, and the ASGI server's concurrency
# limit (docker-compose: --limit-concurrency 200) counts it: so each key may
# hold a few, the process a bounded number well below that limit, and each
# ends after a while (the client reconnects). Counted per web process.
# Threads MCP tool calls run on, per process (each holds a database connection).
MEMORYHUB_MCP_THREADS = env_int("MEMORYHUB_MCP_THREADS", 4)
MEMORYHUB_MCP_STREAMS_PER_KEY = env_int("MEMORYHUB_MCP_STREAMS_PER_KEY", 4)
MEMORYHUB_MCP_STREAMS_MAX = env_int("MEMORYHUB_MCP_STREAMS_MAX", 100)
MEMORYHUB_MCP_STREAM_MAX_SECONDS = env_float("MEMORYHUB_MCP_STREAM_MAX_SECONDS", 300)
MEMORYHUB_MCP_MAX_BODY_BYTES = env_int("MEMORYHUB_MCP_MAX_BODY_BYTES", 1_000_000)
# `mcp_stdio`: how long a tool call still running when stdin closes may take
# to finish and answer before the process exits anyway.
MEMORYHUB_MCP_STDIO_DRAIN_SECONDS = env_float("MEMORYHUB_MCP_STDIO_DRAIN_SECONDS", 60)

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- database ---------------------------------------------------------------
DATABASES = {
    "default": dj_database_url.parse(
        env("DATABASE_URL", f"sqlite:///{VAR_DIR / 'memoryhub.sqlite3'}"),
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60),
        conn_health_checks=True,
    )
}
# A database that is down or hanging must cost a request seconds, not a
# worker: connecting gives up after DATABASE_CONNECT_TIMEOUT seconds, a
# statement after DATABASE_STATEMENT_TIMEOUT_MS (at most 10 s by default; the
# migrate service sets 0 = no limit), a wait for a row lock after
# DATABASE_LOCK_TIMEOUT_MS. Each answers 503 `unavailable` (memoryhub.faults).
DATABASE_CONNECT_TIMEOUT = env_int("DATABASE_CONNECT_TIMEOUT", 5)
DATABASE_STATEMENT_TIMEOUT_MS = env_int("DATABASE_STATEMENT_TIMEOUT_MS", 10_000)
DATABASE_LOCK_TIMEOUT_MS = env_int("DATABASE_LOCK_TIMEOUT_MS", 5_000)
# A transaction left open by a crashed or stuck client releases its locks.
DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS = env_int("DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS", 60_000)
# The role the web, worker and beat connect as (DATABASE_URL), when
# migrations run as the owner (MIGRATE_DATABASE_URL): every migrate grants it
# what it needs and no more (memoryhub.db_roles). Empty: no grants.
DATABASE_APP_ROLE = env("DATABASE_APP_ROLE")
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    _pg_options = " ".join(
        f"-c {name}={value}"
        for name, value in (
            ("statement_timeout", DATABASE_STATEMENT_TIMEOUT_MS),
            ("lock_timeout", DATABASE_LOCK_TIMEOUT_MS),
            ("idle_in_transaction_session_timeout", DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS),
        )
    )
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        connect_timeout=DATABASE_CONNECT_TIMEOUT,
        options=_pg_options,
        # A peer that vanished (host down, network cut) is noticed within a minute.
        keepalives=1, keepalives_idle=30, keepalives_interval=10, keepalives_count=3,
    )
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The web server, the worker and beat share one SQLite file: WAL lets
    # readers run beside a writer, IMMEDIATE transactions take the write lock
    # up front instead of failing with "database is locked" on upgrade.
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        # secure_delete: freed pages and cells are zeroed, so redacted text
        # (services.redaction) does not linger in the file's free space.
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA secure_delete=ON;",
    }
    # A file, not :memory:, so a worker subprocess in a test sees the test
    # data; one per test process, so parallel runs never share it.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / f"test-{os.getpid()}.sqlite3")}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env("DJANGO_STATIC_ROOT", str(BASE_DIR / "staticfiles")))
STATICFILES_DIRS = [BASE_DIR / "static"]
# Serve straight from the apps' and project's static folders, so `make run`
# and the tests need no collectstatic; production still collects at build.
WHITENOISE_USE_FINDERS = True
STATIC_ROOT.mkdir(parents=True, exist_ok=True)

# --- security -----------------------------------------------------------------
# Production turns these on by environment (docker-compose.yml does); they
# stay off by default because `make run` and the tests speak plain HTTP.
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT")
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
if env_bool("DJANGO_BEHIND_TLS_PROXY"):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_SECURE = env_bool("DJANGO_SECURE_COOKIES")
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_HSTS_SECONDS = env_int("DJANGO_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE_HSTS_SECONDS > 0
SECURE_HSTS_PRELOAD = env_bool("DJANGO_HSTS_PRELOAD", SECURE_HSTS_SECONDS >= 31536000)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
# htmx gets the token from {{ csrf_token }} in hx-headers, never the cookie.
CSRF_COOKIE_HTTPONLY = True
# A reviewer's session ends after a working day or when the browser closes.
SESSION_COOKIE_AGE = env_int("DJANGO_SESSION_AGE_SECONDS", 8 * 60 * 60)
SESSION_EXPIRE_AT_BROWSER_CLOSE = True

# --- sign-in throttling (memoryhub.login_throttle) -------------------------------
AUTHENTICATION_BACKENDS = [
    # First: refuses a locked-out username or address before any password check.
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("MEMORYHUB_LOGIN_FAILURE_LIMIT", 5)
# Locked per username and, separately, per address.
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
MEMORYHUB_LOGIN_COOLOFF_SECONDS = env_int("MEMORYHUB_LOGIN_COOLOFF_SECONDS", 300)
AXES_COOLOFF_TIME = "memoryhub.login_throttle.cool_off"
AXES_LOCKOUT_CALLABLE = "memoryhub.login_throttle.lockout_response"
AXES_CLIENT_IP_CALLABLE = "memoryhub.login_throttle.client_ip"
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False
# Proxies in front that append to X-Forwarded-For (1 behind the TLS proxy).
MEMORYHUB_TRUSTED_PROXIES = env_int("MEMORYHUB_TRUSTED_PROXIES", 1 if env_bool("DJANGO_BEHIND_TLS_PROXY") else 0)

LOGIN_URL = "login"
# Auditors land on the audit log, everyone else on the queue.
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# --- cache --------------------------------------------------------------------
REDIS_URL = env("REDIS_URL")
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "memoryhub",
            # A cache outage must cost latency, not availability: short
            # timeouts so the API falls back to the database quickly.
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "memoryhub"}}

# --- Celery -------------------------------------------------------------------
CELERY_BROKER_URL = env("CELERY_BROKER_URL", REDIS_URL or "filesystem://")
if CELERY_BROKER_URL.startswith("filesystem://"):
    _broker_dir = VAR_DIR / "broker"
    for _sub in ("queue", "processed", "control"):
        (_broker_dir / _sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "processed_folder": str(_broker_dir / "processed"),
        # kombu's default is ./control in the working directory.
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
    }
else:
    # Redis redelivers an unacked message after this many seconds; it must
    # exceed the task time limit or a slow run would be handed out twice.
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600)}
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_BACKEND = None
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 240)
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 300)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
CELERY_BEAT_SCHEDULE: dict[str, dict[str, object]] = {
    "consolidation-gate": {
        "task": "consolidation.tasks.run_gate_task",
        "schedule": env_float("MEMORYHUB_GATE_INTERVAL_SECONDS", 300),
    },
    "consolidation-sweep": {
        "task": "consolidation.tasks.sweep_expired_runs_task",
        "schedule": env_float("MEMORYHUB_SWEEP_INTERVAL_SECONDS", 60),
    },
    "log-retention": {
        "task": "memoryhub.tasks.retention_task",
        "schedule": env_float("MEMORYHUB_RETENTION_INTERVAL_SECONDS", 24 * 3600),
    },
    "notifications-sweep": {
        "task": "notifications.tasks.notifications_sweep_task",
        "schedule": env_float("MEMORYHUB_NOTIFY_INTERVAL_SECONDS", 60),
    },
    "purge-expired-keys": {
        "task": "memoryhub.tasks.purge_expired_task",
        "schedule": env_float("MEMORYHUB_PURGE_INTERVAL_SECONDS", 3600),
    },
}
CELERY_TIMEZONE = "UTC"

# --- REST API -----------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # Bounded JSON for every body: size, depth, no NUL (memoryhub.parsers).
    "DEFAULT_PARSER_CLASSES": ["memoryhub.parsers.StrictJSONParser"],
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "EXCEPTION_HANDLER": "memoryhub.rest.exception_handler",
    "DEFAULT_THROTTLE_RATES": {
        "agent": env("MEMORYHUB_AGENT_RATE", "1200/min"),
        "staff": env("MEMORYHUB_STAFF_RATE", "600/min"),
    },
    "DEFAULT_PAGINATION_CLASS": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "MemoryHub API",
    "DESCRIPTION": "Review-gated memory for AI agents. See API.md for the contract.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI served from our static files: no CDN, CSP stays strict.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # A PATCH body is documented as its serializer declares it: the entry
    # replace route needs old_text and new_text (every field of the agent
    # settings PATCH is optional by declaration), not "all optional".
    "COMPONENT_SPLIT_PATCH": False,
    "ENUM_NAME_OVERRIDES": {
        # The serializers' value lists (labels equal to values), so every
        # status of the model belongs here, or the names collide.
        "ProposalStatusEnum": ["pending", "approved", "rejected", "stale", "superseded", "withdrawn"],
        "RunStatusEnum": ["queued", "running", "succeeded", "no_change", "failed", "skipped"],
    },
}

# --- LLM backend (OpenAI-compatible) -----------------------------------------
OPENAI_BASE_URL = env("OPENAI_BASE_URL", "https://api.openai.com/v1")
OPENAI_API_KEY = env("OPENAI_API_KEY")
OPENAI_MODEL = env("OPENAI_MODEL", "gpt-4o-mini")
# Seconds one call may take, end to end (connect, wait, read): a hung or
# trickling endpoint frees the worker within twice this.
OPENAI_TIMEOUT = env_float("OPENAI_TIMEOUT", 60.0)
OPENAI_MAX_RETRIES = env_int("OPENAI_MAX_RETRIES", 2)
# The answer's token ceiling (max_tokens), and what it may cost in the estimate.
OPENAI_MAX_TOKENS = env_int("OPENAI_MAX_TOKENS", 4096)
# A prompt never exceeds this many characters: log entries are batched
# across several calls instead.
OPENAI_MAX_PROMPT_CHARS = env_int("OPENAI_MAX_PROMPT_CHARS", 60_000)
# Calls one run may make; the rest of a backlog waits for the next run.
OPENAI_MAX_CALLS_PER_RUN = env_int("OPENAI_MAX_CALLS_PER_RUN", 8)
# USD per million tokens, for the spend shown per agent per day and the budget.
OPENAI_PRICE_INPUT_PER_MTOK = env_float("OPENAI_PRICE_INPUT_PER_MTOK", 0.15)
OPENAI_PRICE_OUTPUT_PER_MTOK = env_float("OPENAI_PRICE_OUTPUT_PER_MTOK", 0.60)

# --- consolidation (dreaming) ---------------------------------------------------
# A running run's lease. Longer than the task's hard time limit, so the sweep
# never re-queues a run whose worker is still alive.
MEMORYHUB_RUN_LEASE_SECONDS = env_int("MEMORYHUB_RUN_LEASE_SECONDS", CELERY_TASK_TIME_LIMIT + 60)
MEMORYHUB_RUN_MAX_ATTEMPTS = env_int("MEMORYHUB_RUN_MAX_ATTEMPTS", 3)
# The most one run may spend (USD), whatever is left of the agent's daily
# budget; each call is estimated before it is made and not made past either.
CONSOLIDATION_MAX_RUN_COST_USD = env_float("CONSOLIDATION_MAX_RUN_COST_USD", 0.50)
# After a run fails on a transient error the gate leaves the pair alone for
# this long, doubling per failure in a row up to the maximum (and never
# shorter than the model server's Retry-After).
CONSOLIDATION_BACKOFF_BASE_SECONDS = env_int("CONSOLIDATION_BACKOFF_BASE_SECONDS", 900)
CONSOLIDATION_BACKOFF_MAX_SECONDS = env_int("CONSOLIDATION_BACKOFF_MAX_SECONDS", 86_400)
# Log entries in a language the heuristic does not read (not English,
# German, Spanish or French) go to the llm backend when this is on;
# otherwise the run reports them as not understood.
CONSOLIDATION_OTHER_LANGUAGES_TO_LLM = env_bool("CONSOLIDATION_OTHER_LANGUAGES_TO_LLM")

# --- MemoryHub ------------------------------------------------------------------
# A session's frozen context is served at most this long after it started;
# then `?session=` answers 410 session_expired and the agent starts anew.
MEMORYHUB_SESSION_MAX_AGE_SECONDS = env_int("MEMORYHUB_SESSION_MAX_AGE_SECONDS", 24 * 60 * 60)
# --- faults and limits -------------------------------------------------------------
# Sent with every 503 `unavailable` (database down or too slow).
MEMORYHUB_RETRY_AFTER_SECONDS = env_int("MEMORYHUB_RETRY_AFTER_SECONDS", 5)
# The app answers 414/431 itself below these; gunicorn.conf.py sets gunicorn's
# own limits above them, so the client always gets the JSON error body.
MEMORYHUB_MAX_URL_BYTES = env_int("MEMORYHUB_MAX_URL_BYTES", 8000)
MEMORYHUB_MAX_HEADER_BYTES = env_int("MEMORYHUB_MAX_HEADER_BYTES", 8000)
MEMORYHUB_MAX_HEADER_COUNT = env_int("MEMORYHUB_MAX_HEADER_COUNT", 100)
# Request bodies: larger ones answer 413 `too_large` without being read whole.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("MEMORYHUB_MAX_BODY_BYTES", 2_621_440)

# How long an Idempotency-Key's first answer is replayed (memoryhub.idempotency).
MEMORYHUB_IDEMPOTENCY_TTL_SECONDS = env_int("MEMORYHUB_IDEMPOTENCY_TTL_SECONDS", 24 * 60 * 60)

# Under CI every test that needs PostgreSQL or Redis must run, never skip.
MEMORYHUB_REQUIRE_SERVICES = env_bool("MEMORYHUB_REQUIRE_SERVICES")

# --- notifications (docs/operations.md, "Notifications") ---------------------------
# E-mail: the console backend prints mails (make run); production sets the
# SMTP backend and EMAIL_HOST etc. Tests use Django's locmem outbox.
EMAIL_BACKEND = env("MEMORYHUB_EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = env("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = env("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS")
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10)
DEFAULT_FROM_EMAIL = env("DEFAULT_FROM_EMAIL", "memoryhub@localhost")
# The console's address, for links in e-mails (empty: paths only).
MEMORYHUB_CONSOLE_URL = env("MEMORYHUB_CONSOLE_URL")
# Webhook deliveries: attempts in all, backoff base and cap (seconds), one
# request's timeout. Private, loopback and link-local targets are refused
# unless DEBUG or this is set (a closed intranet; the tests).
MEMORYHUB_WEBHOOK_MAX_ATTEMPTS = env_int("MEMORYHUB_WEBHOOK_MAX_ATTEMPTS", 6)
MEMORYHUB_WEBHOOK_BACKOFF_SECONDS = env_float("MEMORYHUB_WEBHOOK_BACKOFF_SECONDS", 30)
MEMORYHUB_WEBHOOK_BACKOFF_MAX_SECONDS = env_float("MEMORYHUB_WEBHOOK_BACKOFF_MAX_SECONDS", 3600)
MEMORYHUB_WEBHOOK_TIMEOUT_SECONDS = env_float("MEMORYHUB_WEBHOOK_TIMEOUT_SECONDS", 10)
MEMORYHUB_WEBHOOK_ALLOW_PRIVATE = env_bool("MEMORYHUB_WEBHOOK_ALLOW_PRIVATE")
# /metrics: a bearer token for the scraper (empty: only admin staff tokens).
MEMORYHUB_METRICS_TOKEN = env("MEMORYHUB_METRICS_TOKEN")

# --- strong sign-in: two-factor (django-otp) and OpenID Connect -------------------
# docs/compliance.md, "Strong sign-in". Off by default so `make run` and the
# tests sign in with a password alone; docker-compose.yml turns 2FA on.
INSTALLED_APPS += ["django_otp", "django_otp.plugins.otp_totp", "django_otp.plugins.otp_static"]
# OTPMiddleware marks request.user verified; TwoFactorMiddleware holds back
# a session that still owes its code (console redirects, API 403).
MIDDLEWARE.insert(MIDDLEWARE.index("django.contrib.auth.middleware.AuthenticationMiddleware") + 1,
                  "django_otp.middleware.OTPMiddleware")
MIDDLEWARE.insert(MIDDLEWARE.index("django_otp.middleware.OTPMiddleware") + 1, "reviews.signin.TwoFactorMiddleware")
MEMORYHUB_REQUIRE_2FA = env_bool("MEMORYHUB_REQUIRE_2FA")
# Roles that must pass two-factor sign-in when it is required (Django-admin
# users always must). Auditors are included: they read and export everything.
MEMORYHUB_2FA_ROLES = env_list("MEMORYHUB_2FA_ROLES", "reviewer,admin,auditor")
# A sign-in through the OpenID Connect provider counts as two-factor: the
# provider enforces its own second factor.
MEMORYHUB_OIDC_SATISFIES_2FA = env_bool("MEMORYHUB_OIDC_SATISFIES_2FA", True)
OTP_TOTP_ISSUER = env("MEMORYHUB_TOTP_ISSUER", "MemoryHub")

# OpenID Connect is on when the client id and the provider's endpoints are set.
AUTHENTICATION_BACKENDS = [*AUTHENTICATION_BACKENDS, "reviews.oidc.MemoryHubOIDCBackend"]
OIDC_RP_CLIENT_ID = env("OIDC_RP_CLIENT_ID")
OIDC_RP_CLIENT_SECRET = env("OIDC_RP_CLIENT_SECRET")
OIDC_OP_ISSUER = env("OIDC_OP_ISSUER")
OIDC_OP_AUTHORIZATION_ENDPOINT = env("OIDC_OP_AUTHORIZATION_ENDPOINT")
OIDC_OP_TOKEN_ENDPOINT = env("OIDC_OP_TOKEN_ENDPOINT")
OIDC_OP_USER_ENDPOINT = env("OIDC_OP_USER_ENDPOINT")
OIDC_OP_JWKS_ENDPOINT = env("OIDC_OP_JWKS_ENDPOINT")
OIDC_RP_SIGN_ALGO = env("OIDC_RP_SIGN_ALGO", "RS256")
OIDC_RP_SCOPES = env("OIDC_RP_SCOPES", "openid email profile")
# The claim listing `workspace:role` values, and the one a new user's name comes from.
OIDC_ROLES_CLAIM = env("OIDC_ROLES_CLAIM", "memoryhub_roles")
OIDC_USERNAME_CLAIM = env("OIDC_USERNAME_CLAIM", "preferred_username")
OIDC_USE_PKCE = True
OIDC_TIMEOUT = env_float("OIDC_TIMEOUT", 10.0)
LOGIN_REDIRECT_URL_FAILURE = "/login/?sso=failed"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env("DJANGO_LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}, "axes": {"level": "WARNING"}},
}
