"""Console-side state: who signed in through which identity provider."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class OIDCIdentity(models.Model):
    """A staff user known to an OpenID Connect provider by (issuer, subject).
    Users are matched by this pair only, never by e-mail or username: a
    provider that lets people choose those must not be able to sign anyone
    in as an existing local account."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="oidc_identity")
    issuer = models.CharField(max_length=255)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(default=timezone.now)
    last_signed_in_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["issuer", "subject"], name="oidc_identity_issuer_subject")]
        verbose_name = "OpenID Connect identity"
        verbose_name_plural = "OpenID Connect identities"

    def __str__(self) -> str:
        return f"{self.user} ← {self.issuer} {self.subject}"
