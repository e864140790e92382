"""The review console: sign-in, queue, proposals, sessions, history, blame,
governance changes and direct writes."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import URLPattern, path

from reviews.views import changes, direct_writes, history, proposal, queue, sessions

urlpatterns: list[URLPattern] = [
    path("login/", auth_views.LoginView.as_view(template_name="registration/login.html",
                                                 redirect_authenticated_user=True), name="login"),
    # Django's LogoutView accepts POST only: a link cannot sign anyone out.
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", queue.queue, name="queue"),
    path("queue/badge/", queue.queue_badge, name="queue-badge"),
    path("queue/bulk/", queue.queue_bulk, name="queue-bulk"),
    path("proposals/<int:pk>/", proposal.proposal_detail, name="proposal"),
    path("sessions/<int:pk>/", sessions.session_detail, name="session"),
    path("agents/<slug:slug>/files/<str:file>/history/", history.file_history, name="file-history"),
    path("agents/<slug:slug>/files/<str:file>/blame/", history.file_blame, name="file-blame"),
    path("changes/", changes.changes, name="changes"),
    path("changes/badge/", changes.changes_badge, name="changes-badge"),
    path("direct-writes/", direct_writes.direct_writes, name="direct-writes"),
]
