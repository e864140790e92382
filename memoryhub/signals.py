"""History plumbing: copy the acting agent, source, proposal and approver
set on a MemoryFile before save() onto the history row simple-history writes.

Setting them before save() (not update_change_reason() afterwards) matters:
history rows are append-only in the database, so they can't be edited later.
"""

from __future__ import annotations

from typing import Any

from django.dispatch import receiver
from simple_history.signals import pre_create_historical_record

from memoryhub.models import MemoryFile


@receiver(pre_create_historical_record, sender=MemoryFile.history.model)
def copy_history_context(sender: object, instance: MemoryFile, history_instance: Any, **kwargs: object) -> None:
    history_instance.source = getattr(instance, "_history_source", history_instance.source)
    history_instance.actor_agent = getattr(instance, "_history_actor_agent", None)
    history_instance.proposal = getattr(instance, "_history_proposal", None)
    history_instance.approved_by = getattr(instance, "_history_approved_by", None)
    # The names as they are now, kept: a later rename must not rewrite history.
    if history_instance.history_user is not None:
        history_instance.history_username = history_instance.history_user.get_username()
    if history_instance.approved_by is not None:
        history_instance.approved_by_username = history_instance.approved_by.get_username()
