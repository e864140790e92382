"""Console pages: an admin's webhooks with their delivery log (add, delete,
send a test), and each person's own e-mail settings. Plain forms that POST
and redirect, read through notifications/forms.py; the rules live in
notifications.services."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from memoryhub import errors, services
from memoryhub.models import Workspace
from memoryhub.services.access import ADMIN_ROLES
from notifications import services as notify
from notifications.forms import NotificationSettingsForm, WebhookActionForm, WebhookAddForm, WebhookForm, valid
from notifications.models import EVENTS


@login_required
@require_http_methods(["GET", "POST"])
def webhooks(request: HttpRequest) -> HttpResponse:
    admin_ids = services.workspace_ids_for(request.user, ADMIN_ROLES)
    if not admin_ids:
        raise PermissionDenied("Only a workspace admin may manage webhooks.")
    # No event ticked: a new receiver gets what its admin chose, not everything.
    form: dict[str, object] = {"url": "", "events": [], "workspace": ""}
    error = ""
    status = 200
    if request.method == "POST":
        try:
            action = valid(WebhookActionForm(request.POST)).cleaned_data["action"]
            if action == "add":
                add = valid(WebhookAddForm(request.POST))
                form = add.shown()
                workspace = notify.admin_workspace(actor=request.user, slug=add.cleaned_data["workspace"] or None)
                hook, generated = notify.create_webhook(actor=request.user, workspace=workspace,
                                                        url=add.cleaned_data["url"],
                                                        events=add.cleaned_data["events"],
                                                        secret=add.cleaned_data["secret"] or None)
                messages.success(request, f"Webhook #{hook.pk} added."
                                 + (f" Its signing secret, shown this once: {generated}" if generated else ""))
            elif action == "delete":
                webhook_id = valid(WebhookForm(request.POST)).cleaned_data["webhook"]
                hook = notify.delete_webhook(actor=request.user, webhook_id=webhook_id)
                messages.success(request, f"Webhook #{hook.pk} deleted; its delivery log is kept.")
            elif action == "test":
                webhook_id = valid(WebhookForm(request.POST)).cleaned_data["webhook"]
                delivery = notify.send_test(actor=request.user, webhook_id=webhook_id)
                messages.success(request, f"Test delivery #{delivery.pk} (ping) queued.")
            else:
                raise errors.Invalid("Unknown action.")
        except errors.PermissionDenied as exc:
            raise PermissionDenied(exc.detail) from exc
        except errors.DomainError as exc:
            error, status = exc.detail, exc.status
        else:
            return HttpResponseRedirect(reverse("webhooks"))
    return TemplateResponse(request, "notifications/webhooks.html", {
        "webhooks": list(notify.visible_webhooks(request.user)),
        "deliveries": notify.recent_deliveries(request.user),
        "workspaces": list(Workspace.objects.filter(pk__in=admin_ids)),
        "events": EVENTS,
        "form": form,
        "error": error,
    }, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def notification_settings(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        choices = NotificationSettingsForm(request.POST)
        if not choices.is_valid():
            return HttpResponseBadRequest("The notification settings could not be read.")
        notify.update_preferences(user=request.user, high_risk=choices.cleaned_data["high_risk"],
                                  overdue=choices.cleaned_data["overdue"],
                                  run_failed=choices.cleaned_data["run_failed"])
        messages.success(request, "Your notification settings are saved.")
        return HttpResponseRedirect(reverse("notification-settings"))
    reviews_somewhere = bool(services.workspace_ids_for(request.user, services.REVIEW_ROLES))
    return TemplateResponse(request, "notifications/settings.html", {
        "pref": notify.preferences_for(request.user),
        "reviews_somewhere": reviews_somewhere,
        "email": getattr(request.user, "email", ""),
    })
