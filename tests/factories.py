from __future__ import annotations

from typing import Any

import factory
from django.contrib.auth import get_user_model

from memoryhub.models import Agent, Membership, Role, ToolSetting, Workspace, WritePolicy


class WorkspaceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Workspace
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"ws-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.title())


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.django.Password("pw-for-tests-1")


class AgentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Agent

    workspace = factory.SubFactory(WorkspaceFactory)
    slug = factory.Sequence(lambda n: f"agent-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.title())
    # New agents default to `review` (tests/memoryhub/test_agents.py shows it);
    # most tests exercise the write path itself, so their agents write directly.
    write_policy = WritePolicy.DIRECT


class ToolFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ToolSetting

    agent = factory.SubFactory(AgentFactory)
    name = factory.Sequence(lambda n: f"tool_{n}")
    description = "Looks something up."
    parameters = factory.LazyFunction(lambda: {"type": "object", "properties": {"q": {"type": "string"}}})


def staff(workspace: Workspace, role: str = Role.REVIEWER, **kwargs: Any) -> Any:
    user = UserFactory(**kwargs)
    Membership.objects.update_or_create(user=user, workspace=workspace, defaults={"role": role})
    return user
