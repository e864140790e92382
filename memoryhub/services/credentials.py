"""Agent API keys and staff personal tokens: issued once, stored as hashes,
compared in constant time."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from memoryhub import errors
from memoryhub.actors import Actor, StaffUser
from memoryhub.models import Agent, ApiKey, StaffToken
from memoryhub.services.access import _int_id, require_admin, user_or_none
from memoryhub.services.audit import record_event

AGENT_KEY_PREFIX = "mh_"
STAFF_TOKEN_PREFIX = "mhs_"
KEY_NAME_MAX = 100
_PREFIX_HEX = 8


def hash_secret(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def _new_secret(kind_prefix: str) -> tuple[str, str]:
    prefix = kind_prefix + secrets.token_hex(_PREFIX_HEX // 2)
    return prefix, f"{prefix}_{secrets.token_urlsafe(32)}"


def _key_name(name: object) -> str:
    if not isinstance(name, str) or len(name.strip()) > KEY_NAME_MAX or not name.isprintable():
        raise errors.Invalid(f"A key name is at most {KEY_NAME_MAX} printable characters.", field="name")
    return name.strip()


def issue_agent_key(*, agent: Agent, actor: Actor, name: object = "") -> tuple[ApiKey, str]:
    """Create a key and return it with its raw value, which is never stored."""
    require_admin(user=actor, workspace=agent.workspace_id, action="issue API keys")
    name = _key_name(name)
    prefix, raw = _new_secret(AGENT_KEY_PREFIX)
    with transaction.atomic():
        key = ApiKey.objects.create(agent=agent, name=name, prefix=prefix, key_hash=hash_secret(raw),
                                    created_by=user_or_none(actor))
        record_event(action="key.issue", agent=agent, actor_user=actor, target=key,
                     summary=f"Issued API key {prefix}… for {agent.slug}", details={"name": name})
    return key, raw


def get_agent_key(*, agent: Agent, key_id: object) -> ApiKey:
    try:
        pk = _int_id(key_id, "key")
        return ApiKey.objects.select_related("agent__workspace").get(pk=pk, agent=agent)
    except (errors.NotFound, OverflowError, ApiKey.DoesNotExist) as exc:
        raise errors.NotFound("This agent has no such key.") from exc


def revoke_agent_key(*, key: ApiKey, actor: Actor) -> ApiKey:
    require_admin(user=actor, workspace=key.agent.workspace_id, action="revoke API keys")
    with transaction.atomic():
        if ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(revoked_at=timezone.now()):
            record_event(action="key.revoke", agent=key.agent, actor_user=actor, target=key,
                         summary=f"Revoked API key {key.prefix}… of {key.agent.slug}")
    key.refresh_from_db(fields=["revoked_at"])
    return key


def issue_staff_token(*, user: StaffUser, name: object = "") -> tuple[StaffToken, str]:
    """A personal token for the user themselves (issued at the shell)."""
    name = _key_name(name)
    prefix, raw = _new_secret(STAFF_TOKEN_PREFIX)
    with transaction.atomic():
        token = StaffToken.objects.create(user=user, name=name, prefix=prefix, key_hash=hash_secret(raw))
        record_event(action="token.issue", actor_user=user, target=token, summary=f"Issued personal token {prefix}…")
    return token, raw


def revoke_staff_token(*, token: StaffToken, user: Actor | None = None) -> StaffToken:
    with transaction.atomic():
        if StaffToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now()):
            record_event(
                action="token.revoke",
                actor_user=user,
                target=token,
                summary=f"Revoked personal token {token.prefix}… of {token.user}",
            )
    token.refresh_from_db(fields=["revoked_at"])
    return token


def _split_prefix(raw: str, kind_prefix: str) -> str:
    # The secret part is urlsafe base64 and may itself contain "_": cut by length.
    return raw[: len(kind_prefix) + _PREFIX_HEX]


def agent_for_key(raw: str) -> tuple[Agent, ApiKey] | None:
    """The agent a raw key belongs to, or None for an unknown or revoked key.
    Looks up by the visible prefix, then compares hashes in constant time."""
    if not raw.startswith(AGENT_KEY_PREFIX):
        return None
    prefix = _split_prefix(raw, AGENT_KEY_PREFIX)
    key = ApiKey.objects.usable().select_related("agent__workspace").filter(prefix=prefix).first()
    if key is None or not hmac.compare_digest(key.key_hash, hash_secret(raw)):
        return None
    return key.agent, key


def user_for_token(raw: str) -> tuple[StaffUser, StaffToken] | None:
    if not raw.startswith(STAFF_TOKEN_PREFIX):
        return None
    token = (
        StaffToken.objects.select_related("user")
        .filter(prefix=_split_prefix(raw, STAFF_TOKEN_PREFIX), revoked_at__isnull=True, user__is_active=True)
        .first()
    )
    if token is None or not hmac.compare_digest(token.key_hash, hash_secret(raw)):
        return None
    return token.user, token


# Touching last_used_at on every request would turn each read into a write.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def touch_last_used(model: type[ApiKey] | type[StaffToken], pk: int, last_used_at: datetime | None) -> None:
    now = timezone.now()
    if last_used_at is None or now - last_used_at >= LAST_USED_RESOLUTION:
        model.objects.filter(pk=pk).update(last_used_at=now)
