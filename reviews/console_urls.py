"""The review console: sign-in, queue, proposals, sessions, history, blame,
governance changes and direct writes."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import URLPattern, path

from reviews import views

urlpatterns: list[URLPattern] = [
    path("login/", auth_views.LoginView.as_view(template_name="registration/login.html",
                                                 redirect_authenticated_user=True), name="login"),
    # Django's LogoutView accepts POST only: a link cannot sign anyone out.
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", views.queue, name="queue"),
    path("queue/badge/", views.queue_badge, name="queue-badge"),
    path("queue/bulk/", views.queue_bulk, name="queue-bulk"),
    path("proposals/<int:pk>/", views.proposal_detail, name="proposal"),
    path("sessions/<int:pk>/", views.session_detail, name="session"),
    path("agents/<slug:slug>/files/<str:file>/history/", views.file_history, name="file-history"),
    path("agents/<slug:slug>/files/<str:file>/blame/", views.file_blame, name="file-blame"),
    path("changes/", views.changes, name="changes"),
    path("changes/badge/", views.changes_badge, name="changes-badge"),
    path("direct-writes/", views.direct_writes, name="direct-writes"),
]
