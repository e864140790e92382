"""Staff users and their roles. Users are never deleted: history and audit
rows keep their authors; a deactivated user can neither sign in nor use a
token."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import models, transaction

from memoryhub import errors
from memoryhub.actors import Actor, StaffUser
from memoryhub.models import Membership, Role, Workspace
from memoryhub.services.audit import record_event


def _check_choice(value: str, *, choices: type[models.TextChoices], field: str) -> str:
    if value not in choices.values:
        raise errors.Invalid(f"{field} must be one of {', '.join(choices.values)}; got {value!r}.", field=field)
    return value


def ensure_staff_user(
    *, username: str, email: str = "", password: str | None = None, check_password: bool = True
) -> tuple[StaffUser, bool]:
    """The user with this username, created if missing. A new user without a
    password gets an unusable one (token or admin-set password only). The
    password of an existing user is never touched here: see set_password."""
    User = get_user_model()
    username = username.strip()
    if not username:
        raise errors.Invalid("A username is required.", field="username")
    with transaction.atomic():
        user = User.objects.filter(username=username).first()
        if user is not None:
            return user, False
        user = User(username=username, email=email)
        try:
            user.full_clean(exclude=["password"])
        except ValidationError as exc:
            raise errors.Invalid("; ".join(exc.messages), field="username") from exc
        if password:
            if check_password:
                _validate_password(password, user)
            user.set_password(password)
        else:
            user.set_unusable_password()
        user.save()
        record_event(
            action="staff.create",
            target=user,
            summary=f"Created staff user {username}",
            details={"usable_password": bool(password)},
        )
    return user, True


def _validate_password(password: str, user: StaffUser) -> None:
    try:
        validate_password(password, user)
    except ValidationError as exc:
        raise errors.Invalid(" ".join(exc.messages), field="password") from exc


def set_password(*, user: StaffUser, password: str, actor_user: Actor | None = None) -> None:
    _validate_password(password, user)
    user.set_password(password)
    user.save(update_fields=["password"])
    record_event(
        action="staff.password", actor_user=actor_user, target=user, summary=f"Set the password of {user.username}"
    )


def set_role(*, user: StaffUser, workspace: Workspace, role: str,
             actor_user: Actor | None = None) -> tuple[Membership, bool]:
    """Give the user this role in this workspace, replacing the role it had
    there (one role per user and workspace). Admins also get into the Django
    admin (is_staff). Returns (membership, changed)."""
    _check_choice(role, choices=Role, field="role")
    with transaction.atomic():
        membership = Membership.objects.select_for_update().filter(user=user, workspace=workspace).first()
        previous = membership.role if membership else None
        if membership is None:
            membership = Membership.objects.create(user=user, workspace=workspace, role=role)
        elif membership.role != role:
            membership.role = role
            membership.save(update_fields=["role"])
        if role == Role.ADMIN and not user.is_staff:
            user.is_staff = True
            user.save(update_fields=["is_staff"])
        if previous == role:
            return membership, False
        record_event(
            action="staff.role",
            workspace=workspace,
            actor_user=actor_user,
            target=membership,
            summary=f"{user.username} is now {role} in {workspace.slug}" + (f" (was {previous})" if previous else ""),
            details={"user": user.username, "role": role, "previous": previous},
        )
    return membership, True


def remove_role(*, membership: Membership, actor_user: Actor | None = None) -> None:
    with transaction.atomic():
        record_event(
            action="staff.role_removed",
            workspace=membership.workspace,
            actor_user=actor_user,
            target=membership,
            summary=f"{membership.user} no longer has a role in {membership.workspace.slug}",
            details={"user": str(membership.user), "role": membership.role},
        )
        membership.delete()


def deactivate_user(*, user: StaffUser, actor_user: Actor | None = None) -> bool:
    """Users are never deleted (history keeps its authors); a deactivated
    user can neither log in nor use a token. Returns False if already inactive."""
    User = get_user_model()
    with transaction.atomic():
        if not User.objects.filter(pk=user.pk, is_active=True).update(is_active=False):
            return False
        user.is_active = False
        record_event(
            action="staff.deactivate",
            actor_user=actor_user,
            target=user,
            summary=f"Deactivated user {user.username}",
        )
    return True



def grant_superuser(*, user: StaffUser, actor_user: Actor | None = None) -> bool:
    """Full Django-admin rights. Returns False if the user already had them."""
    if user.is_superuser and user.is_staff:
        return False
    user.is_superuser = True
    user.is_staff = True
    user.save(update_fields=["is_superuser", "is_staff"])
    record_event(
        action="staff.superuser", actor_user=actor_user, target=user, summary=f"Made {user.username} a superuser"
    )
    return True
