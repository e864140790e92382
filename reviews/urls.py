from __future__ import annotations

from django.urls import include, path

# The review console (queue, proposals, history) and the admin/audit pages
# are separate modules so each stays small.
urlpatterns = [
    path("", include("reviews.console_urls")),
    path("", include("reviews.admin_urls")),
]
