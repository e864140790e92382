from __future__ import annotations

import sys

from django.contrib import admin
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import include, path
from django.views import defaults
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from memoryhub import faults, health, metrics


def _api_error(request: HttpRequest, status: int, code: str, detail: str) -> JsonResponse | None:
    if request.path.startswith("/api/"):
        return JsonResponse({"error": {"code": code, "detail": detail}}, status=status)
    return None


# Outside DRF's views (an unmatched path, a request Django itself refuses),
# API clients still get the API's error body, never an HTML page.
def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    return _api_error(request, 404, "not_found", "There is no such API route.") or defaults.page_not_found(
        request, exception
    )


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    return _api_error(request, 400, "invalid", "The request could not be understood.") or defaults.bad_request(
        request, exception
    )


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    return _api_error(request, 403, "permission_denied", "You may not do this.") or defaults.permission_denied(
        request, exception
    )


def server_error(request: HttpRequest, *args: object) -> HttpResponse:
    # Called inside Django's `except` block, wherever the error came from
    # (a middleware, a view, a template): a database that is down or too
    # slow is a 503 to retry, not a 500.
    if faults.is_unavailable(sys.exc_info()[1]):
        return faults.unavailable_response(request)
    return _api_error(
        request, 500, "server_error", "Something went wrong on our side; nothing was stored."
    ) or defaults.server_error(request)


handler404 = not_found
handler400 = bad_request
handler403 = permission_denied
handler500 = server_error

# memoryhub imports neither reviews nor consolidation: their URLs are
# included by module name only.
urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", metrics.metrics_view, name="metrics"),
    path("api/v1/", include("memoryhub.api_urls")),
    path("api/v1/", include("reviews.api_urls")),
    path("api/v1/", include("consolidation.api_urls")),
    path("api/v1/", include("notifications.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("django-admin/", admin.site.urls),
    path("", include("notifications.urls")),
    path("", include("reviews.urls")),
]
