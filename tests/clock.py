"""Moving the application's clock forward in a test.

The database refuses rows dated in the past (the append-only guards allow a
few minutes of clock skew), so a test that needs "old" data writes it now
and then looks at it from the future: `later(days=…)` is the moment to look
from, `looking_from(moment)` makes `django.utils.timezone.now` answer it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from unittest import mock

from django.utils import timezone


def later(**delta: float) -> datetime:
    return timezone.now() + timedelta(**delta)


@contextmanager
def looking_from(moment: datetime) -> Iterator[datetime]:
    with mock.patch("django.utils.timezone.now", return_value=moment):
        yield moment
