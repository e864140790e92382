"""The single sign-on button of the sign-in page, shown only when OpenID
Connect is configured."""

from __future__ import annotations

from django import template
from django.template.context import Context

from reviews import oidc

register = template.Library()


@register.inclusion_tag("registration/_oidc_button.html", takes_context=True)
def oidc_button(context: Context) -> dict[str, object]:
    request = context.get("request")
    failed = bool(request is not None and request.GET.get("sso") == "failed")
    return {"enabled": oidc.enabled(), "failed": failed, "next": context.get("next", "")}
