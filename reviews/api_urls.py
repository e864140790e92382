from __future__ import annotations

from django.urls import path

from reviews import api

urlpatterns = [
    path("proposals", api.ProposalListView.as_view(), name="api-proposals"),
    path("proposals/<int:proposal_id>", api.ProposalDetailView.as_view(), name="api-proposal"),
    path("proposals/<int:proposal_id>/approve", api.ProposalApproveView.as_view(), name="api-proposal-approve"),
    path("proposals/<int:proposal_id>/reject", api.ProposalRejectView.as_view(), name="api-proposal-reject"),
    path("agents/<slug:slug>/files/<str:file>/versions", api.FileVersionsView.as_view(), name="api-file-versions"),
    path("agents/<slug:slug>/files/<str:file>/rollback", api.FileRollbackView.as_view(), name="api-file-rollback"),
]
