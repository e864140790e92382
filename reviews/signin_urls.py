"""Sign-in steps beyond the password: two-factor verification and
enrolment, and OpenID Connect (its routes answer 404 unless configured)."""

from __future__ import annotations

from django.urls import path

from reviews import oidc, signin

urlpatterns = [
    path("2fa/verify/", signin.verify, name="two-factor-verify"),
    path("2fa/enrol/", signin.enrol, name="two-factor-enrol"),
    path("oidc/authenticate/", oidc.authenticate, name="oidc_authentication_init"),
    path("oidc/callback/", oidc.callback, name="oidc_authentication_callback"),
]
