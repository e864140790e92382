"""One Django Form per console POST action.

A form only reads the request into typed values (what a field is called,
whether it is stripped, how JSON is parsed); every rule about the values
stays in the service the view calls (one home per rule,
tests/test_parity.py). So the fields are permissive: a missing field is
the empty string and the service answers it as before. `valid()` turns a
form error into the same `errors.Invalid` a service raises, so a view
handles both in one place.
"""

from __future__ import annotations

import json
from typing import TypeVar

from django import forms

from memoryhub import errors
from memoryhub.services import POLICY_FIELDS

F = TypeVar("F", bound=forms.Form)


def valid(form: F) -> F:
    """The form, bound and valid, or `errors.Invalid` with its first error."""
    if not form.is_valid():
        messages = [str(message) for field_errors in form.errors.values() for message in field_errors]
        raise errors.Invalid(messages[0] if messages else "The form is not valid.")
    return form


def _text(*, strip: bool = False) -> forms.CharField:
    return forms.CharField(required=False, strip=strip)


class PersonaForm(forms.Form):
    """`agents/<slug>/persona/`: propose a new SOUL/ABOUT/TOOLS.md."""

    kind = _text()
    content = _text()
    reason = _text(strip=True)

    def clean_content(self) -> str:
        # Browsers submit textarea line breaks as CRLF; the limit counts characters a reader sees.
        return str(self.cleaned_data["content"]).replace("\r\n", "\n")

    def shown(self) -> dict[str, str]:
        """What the page shows again next to an error: the cleaned values,
        or what was sent when the form itself is not valid."""
        data = self.cleaned_data if self.is_valid() else {k: self.data.get(k, "") for k in self.fields}
        return {k: str(data[k]) for k in ("kind", "content", "reason")}

    @property
    def kind_value(self) -> str:
        return str(self.cleaned_data["kind"])

    @property
    def content_value(self) -> str:
        return str(self.cleaned_data["content"])

    @property
    def reason_value(self) -> str:
        return str(self.cleaned_data["reason"])


class ToolsForm(forms.Form):
    """`agents/<slug>/tools/`: replace the tool registry with a JSON list."""

    tools = _text()

    def clean_tools(self) -> object:
        raw = str(self.cleaned_data["tools"])
        try:
            parsed: object = json.loads(raw or "[]")
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(f"This is not valid JSON: {exc.msg} (line {exc.lineno}).") from exc
        return parsed

    @property
    def raw(self) -> str:
        """What was typed, to show again next to an error."""
        return str(self.data.get("tools", ""))

    @property
    def tools_value(self) -> object:
        return self.cleaned_data["tools"]


class PoliciesForm(forms.Form):
    """`agents/<slug>/policies/`: the agent's settings, as typed strings the
    service parses (services.update_agent names each value's rule)."""

    reason = _text()

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        for field in POLICY_FIELDS:
            self.fields[field] = _text()

    @property
    def settings(self) -> dict[str, str]:
        values = {field: str(self.cleaned_data[field]) for field in POLICY_FIELDS}
        # A form without the switch (an older page) leaves it as it is.
        if "spotlighting" not in self.data:
            values.pop("spotlighting", None)
        return values

    @property
    def reason_value(self) -> str:
        return str(self.cleaned_data["reason"])


class ConsolidateForm(forms.Form):
    """`agents/<slug>/consolidate/`: queue a consolidation run for one user."""

    user = _text()

    @property
    def user_ref(self) -> str:
        return str(self.cleaned_data["user"])


class KeyCreateForm(forms.Form):
    """`agents/<slug>/keys/`: issue an API key."""

    name = _text()

    @property
    def name_value(self) -> str:
        return str(self.cleaned_data["name"])


class KeyRevokeForm(forms.Form):
    """`agents/<slug>/keys/<id>/revoke/`: the key is in the URL; the form
    only carries the confirmation."""

    confirm = _text()

    def clean_confirm(self) -> bool:
        if self.cleaned_data["confirm"] != "yes":
            raise forms.ValidationError("Confirm the revocation to revoke a key.")
        return True


# --- the review console's POST actions -------------------------------------------------------


def _int_or_none(value: object) -> int | None:
    """A whole number, or None for anything else (the service or view then
    answers what is missing in its own words)."""
    try:
        return int(str(value))
    except (TypeError, ValueError, OverflowError):
        return None


class ActionForm(forms.Form):
    """A console form whose fields are all text, named in `text_fields`:
    `value(name)` is one, cleaned."""

    text_fields: tuple[str, ...] = ()

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        for name in self.text_fields:
            self.fields[name] = _text()

    def value(self, name: str) -> str:
        return str(self.cleaned_data[name])


class DecisionForm(ActionForm):
    """`proposals/<pk>/`: approve, reject, withdraw, edit, rebase, claim or
    unclaim (the hidden `action`; the view names what each does)."""

    text_fields = ("action", "comment", "reason_code", "acknowledge_personal_data", "content", "next")

    @property
    def acknowledged(self) -> bool:
        return self.value("acknowledge_personal_data") in ("1", "true", "True", "on")

    @property
    def go_next(self) -> bool:
        return bool(self.value("next"))


class BulkDecisionForm(ActionForm):
    """`queue/bulk/`: approve or reject the ticked proposals with one reason code."""

    ids = forms.Field(required=False, widget=forms.MultipleHiddenInput)
    text_fields = ("action", "reason_code", "comment", "query")

    @property
    def id_values(self) -> list[str]:
        return [str(pk) for pk in self.cleaned_data["ids"] or []]


class FileActionForm(ActionForm):
    """`agents/<slug>/files/<file>/history/` (rollback, withhold, release)
    and `direct-writes/` (withhold, rollback of one row)."""

    text_fields = ("action", "reason", "version", "agent", "file", "user", "row")

    @property
    def version_value(self) -> int | None:
        return _int_or_none(self.cleaned_data["version"])

    @property
    def row_value(self) -> int | None:
        return _int_or_none(self.cleaned_data["row"])


class ChangeDecisionForm(ActionForm):
    """`changes/`: approve, reject or withdraw one change."""

    text_fields = ("change", "action", "comment")
