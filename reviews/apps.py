from __future__ import annotations

from django.apps import AppConfig


class ReviewsConfig(AppConfig):
    name = "reviews"
    verbose_name = "Reviews"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from memoryhub.services import sweep

        sweep.declare_subject_free("reviews.OIDCIdentity", {
            "issuer": "a staff member's identity provider", "subject": "a staff member's id at the provider"})
