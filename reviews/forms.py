"""One Django Form per console POST action (and for the GET forms whose
values a view passes on: the context preview, the audit filters and the
subject export).

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
from memoryhub.services import POLICY_FIELDS, WORKSPACE_SETTINGS

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

    def shown(self) -> dict[str, str]:
        """What the page shows again next to an error: the cleaned values,
        or what was sent when the form itself is not valid."""
        data = self.cleaned_data if self.is_valid() else self.data
        return {name: str(data.get(name, "")) for name in self.text_fields}


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


# --- the admin pages and the compliance page -----------------------------------------------------


class CreateAgentForm(ActionForm):
    """`agents/`: create an agent in a workspace where the user is an admin."""

    text_fields = ("slug", "name", "workspace", "strategy", "write_policy", "backend")

    @property
    def workspace_id(self) -> int:
        # Not a number names no workspace: the view refuses it like one the user does not administer.
        return _int_or_none(self.cleaned_data["workspace"]) or 0


class WorkspaceSettingsForm(forms.Form):
    """`workspaces/<slug>/settings/`: the settings the page sent (values as
    typed; services.update_workspace parses each) and why."""

    reason = _text(strip=True)

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        for field in WORKSPACE_SETTINGS:
            self.fields[field] = _text()

    @property
    def typed(self) -> dict[str, str]:
        """Each setting the form carried; one it left out stays as it is."""
        return {field: str(self.cleaned_data[field]) for field in WORKSPACE_SETTINGS if field in self.data}

    @property
    def reason_value(self) -> str:
        return str(self.cleaned_data["reason"])

    def shown(self) -> dict[str, str]:
        """What the page shows again next to an error."""
        if self.is_valid():
            return {**self.typed, "reason": self.reason_value}
        return {field: str(self.data[field]) for field in [*WORKSPACE_SETTINGS, "reason"] if field in self.data}


class QueryForm(forms.Form):
    """A page's GET parameters. A page answers whatever it is given (an
    unknown version shows the latest, a bad user is the service's 404), so
    these forms refuse nothing: `value(name)` is the cleaned text, or what
    was sent when it is not valid text."""

    def value(self, name: str) -> str:
        data = self.cleaned_data if self.is_valid() else self.data
        return str(data.get(name, ""))

    def number(self, name: str) -> int | None:
        return _int_or_none(self.value(name)) if self.value(name) else None


class DiffQueryForm(QueryForm):
    """`?view=unified` and `?context=all` on a page with a diff."""

    view = _text()
    context = _text()

    @property
    def unified_view(self) -> bool:
        return self.value("view") == "unified"

    @property
    def whole(self) -> bool:
        return self.value("context") == "all"


class FileQueryForm(DiffQueryForm):
    """A file's history or blame: whose file (`user`), which versions to
    compare (`a`, `b`) and which rollback to confirm."""

    user = _text()
    a = _text()
    b = _text()
    rollback = _text()


class PreviewForm(QueryForm):
    """`agents/<slug>/preview/` (GET): whose context, by which strategy
    (empty: the agent's own)."""

    user = _text(strip=True)
    strategy = _text()


class SubjectExportForm(ActionForm):
    """`compliance/export/` (GET): one end user's data, in one workspace or all of the user's."""

    text_fields = ("user", "workspace")


class ErasureRequestForm(ActionForm):
    """`compliance/erasure/`: request an erasure, which a second admin approves."""

    text_fields = ("user", "workspace", "reason")


class RetentionForm(ActionForm):
    """`compliance/retention/`: set one workspace's log retention."""

    text_fields = ("workspace", "days", "reason")


# The audit filters, in the order their problems are named (the first one
# is the `field` of the export's refusal).
AUDIT_FILTERS = ("action", "agent", "actor", "user", "q", "date_from", "date_to")
AUDIT_FORMATS = ("csv", "json")


class AuditFilterForm(forms.Form):
    """`audit/` (GET): the filters as stripped text, and the export format.
    Nothing here refuses the page: a value that is not one is a problem the
    view names and ignores."""

    format = _text()

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        for name in AUDIT_FILTERS:
            self.fields[name] = _text(strip=True)

    def clean_format(self) -> str:
        fmt = str(self.cleaned_data["format"])
        if fmt and fmt not in AUDIT_FORMATS:
            raise forms.ValidationError(f"format must be csv or json; {fmt[:20]!r} was ignored.")
        return fmt

    def filters(self) -> dict[str, str]:
        """Each filter's value; one that is not valid text is empty."""
        self.is_valid()
        return {name: str(self.cleaned_data.get(name, "")) for name in AUDIT_FILTERS}

    @property
    def fmt(self) -> str:
        """The export format asked for ("" for the page)."""
        self.is_valid()
        return str(self.cleaned_data.get("format", ""))

    def problems(self) -> list[tuple[str, str]]:
        """(parameter, message) for each value the form could not read."""
        self.is_valid()
        return [(name, " ".join(str(m) for m in self.errors[name])) for name in ("format", *AUDIT_FILTERS)
                if name in self.errors]
