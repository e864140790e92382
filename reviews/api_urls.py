from __future__ import annotations

from django.urls import path

from reviews import api, api_subjects

urlpatterns = [
    path("proposals", api.ProposalListView.as_view(), name="api-proposals"),
    path("proposals/bulk", api.ProposalBulkView.as_view(), name="api-proposals-bulk"),
    path("proposals/<int:proposal_id>", api.ProposalDetailView.as_view(), name="api-proposal"),
    path("proposals/<int:proposal_id>/claim", api.ProposalClaimView.as_view(), name="api-proposal-claim"),
    path("proposals/<int:proposal_id>/unclaim", api.ProposalUnclaimView.as_view(), name="api-proposal-unclaim"),
    path("proposals/<int:proposal_id>/approve", api.ProposalApproveView.as_view(), name="api-proposal-approve"),
    path("proposals/<int:proposal_id>/reject", api.ProposalRejectView.as_view(), name="api-proposal-reject"),
    path("proposals/<int:proposal_id>/withdraw", api.ProposalWithdrawView.as_view(), name="api-proposal-withdraw"),
    path("proposals/<int:proposal_id>/rebase", api.ProposalRebaseView.as_view(), name="api-proposal-rebase"),
    path("agents/<slug:slug>", api.AgentDetailView.as_view(), name="api-agent"),
    path("agents/<slug:slug>/files/<str:file>/versions", api.FileVersionsView.as_view(), name="api-file-versions"),
    path("agents/<slug:slug>/files/<str:file>/rollback", api.FileRollbackView.as_view(), name="api-file-rollback"),
    path("agents/<slug:slug>/files/<str:file>/withhold", api.FileWithholdView.as_view(), name="api-file-withhold"),
    path("agents/<slug:slug>/files/<str:file>/release", api.FileReleaseView.as_view(), name="api-file-release"),
    path("changes", api.ChangeListView.as_view(), name="api-changes"),
    path("changes/<int:change_id>/approve", api.ChangeApproveView.as_view(), name="api-change-approve"),
    path("changes/<int:change_id>/reject", api.ChangeRejectView.as_view(), name="api-change-reject"),
    path("changes/<int:change_id>/withdraw", api.ChangeWithdrawView.as_view(), name="api-change-withdraw"),
    path("subjects/<path:user_ref>/export", api_subjects.SubjectExportView.as_view(), name="api-subject-export"),
    path("subjects/<path:user_ref>/erasure", api_subjects.SubjectErasureView.as_view(),
         name="api-subject-erasure"),
]
