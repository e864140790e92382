"""`{% once_token %}`: the one-time token of reviews.once, as a hidden input."""

from __future__ import annotations

from django import template
from django.template.context import Context
from django.utils.html import format_html
from django.utils.safestring import SafeString

from reviews import once

register = template.Library()


@register.simple_tag(takes_context=True)
def once_token(context: Context) -> SafeString:
    return format_html('<input type="hidden" name="{}" value="{}">', once.FIELD, once.issue(context["request"]))
