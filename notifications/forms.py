"""One Django Form per POST of the webhook and notification-settings pages.

As in reviews/forms.py, a form only reads the request into typed values;
every rule about them (which URLs, events, workspaces, who may) stays in
notifications.services. Fields are permissive (a missing one is the empty
string, for the service to answer in its own words), except that a NUL in
any of them makes the form invalid (Django's CharField refuses it), which
the view answers with a 400 next to the form.
"""

from __future__ import annotations

from typing import TypeVar

from django import forms

from memoryhub import errors

F = TypeVar("F", bound=forms.Form)


def _text() -> forms.CharField:
    return forms.CharField(required=False, strip=False)


def valid(form: F) -> F:
    """The form, bound and valid, or `errors.Invalid` with its first error."""
    if not form.is_valid():
        messages = [str(message) for field_errors in form.errors.values() for message in field_errors]
        raise errors.Invalid(messages[0] if messages else "The form is not valid.")
    return form


class WebhookActionForm(forms.Form):
    """`webhooks/`: which of the page's three buttons was pressed."""

    action = _text()


class WebhookAddForm(forms.Form):
    """`webhooks/` with action=add: a new receiver."""

    url = _text()
    workspace = _text()
    secret = _text()
    # Any name passes here: notifications.services.validate_events names an unknown one.
    events = forms.Field(required=False, widget=forms.SelectMultiple)

    def clean_events(self) -> list[str]:
        return [str(event) for event in self.cleaned_data["events"] or []]

    def shown(self) -> dict[str, object]:
        """What the page fills in again when the service refuses the values
        (never the secret)."""
        data = self.cleaned_data
        return {"url": str(data["url"]), "events": list(data["events"]), "workspace": str(data["workspace"])}


class WebhookForm(forms.Form):
    """`webhooks/` with action=delete or test: the webhook the row names."""

    webhook = _text()


class NotificationSettingsForm(forms.Form):
    """`settings/notifications/`: a person's own e-mail settings (a box not
    ticked is not sent, so it reads False)."""

    high_risk = forms.BooleanField(required=False)
    overdue = forms.BooleanField(required=False)
    run_failed = forms.BooleanField(required=False)
