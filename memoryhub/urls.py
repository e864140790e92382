from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView


def healthz(request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok", content_type="text/plain")


# memoryhub imports neither reviews nor consolidation: their URLs are
# included by module name only.
urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("api/v1/", include("memoryhub.api_urls")),
    path("api/v1/", include("reviews.api_urls")),
    path("api/v1/", include("consolidation.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("django-admin/", admin.site.urls),
    path("", include("reviews.urls")),
]
