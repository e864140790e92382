"""Production settings, as docker-compose.yml sets them, pass Django's
deployment checks with no warning."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Set for the tests' own Playwright runs (tests/conftest.py), never in production.
TEST_ONLY = {"DJANGO_ALLOW_ASYNC_UNSAFE", "DATABASE_URL", "REDIS_URL"}


def base_env() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key not in TEST_ONLY}


def test_production_settings_pass_check_deploy(tmp_path):
    env = {
        **base_env(),
        "DJANGO_DEBUG": "0",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "DJANGO_ALLOWED_HOSTS": "memoryhub.example.com",
        "DJANGO_BEHIND_TLS_PROXY": "1",
        "DJANGO_SECURE_SSL_REDIRECT": "1",
        "DJANGO_SECURE_COOKIES": "1",
        "DJANGO_HSTS_SECONDS": "31536000",
        "MEMORYHUB_VAR_DIR": str(tmp_path),
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_the_development_defaults_would_fail_it(tmp_path):
    env = {**base_env(), "DJANGO_DEBUG": "0", "MEMORYHUB_VAR_DIR": str(tmp_path)}
    for name in ("DJANGO_SECURE_SSL_REDIRECT", "DJANGO_SECURE_COOKIES", "DJANGO_HSTS_SECONDS"):
        env.pop(name, None)
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode != 0 and "SECURE_SSL_REDIRECT" in result.stderr + result.stdout
