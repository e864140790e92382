"""A small OpenID Connect provider for tests, on 127.0.0.1: discovery,
authorize (signs in whoever `provider.claims` describes, at once), token
(code flow with client secret and PKCE S256, an RS256 id_token), userinfo
and JWKS. No outside network.

    with OIDCProvider() as provider:
        provider.claims = {"sub": "u1", "preferred_username": "ann", "memoryhub_roles": ["acme:reviewer"]}
        settings.__dict__.update(provider.settings())
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

KID = "test-key-1"


class OIDCProvider:
    def __init__(self, client_id: str = "memoryhub", client_secret: str = "s3cret") -> None:
        self.client_id = client_id
        self.client_secret = client_secret
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.claims: dict[str, Any] = {}
        # Test knobs: sign with a key the JWKS does not hold; another audience.
        self.forge_signature = False
        self.audience: str | None = None
        self.codes: dict[str, dict[str, Any]] = {}
        self.tokens: dict[str, dict[str, Any]] = {}
        self.requests: list[str] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> OIDCProvider:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

    def settings(self) -> dict[str, Any]:
        return {
            "OIDC_RP_CLIENT_ID": self.client_id,
            "OIDC_RP_CLIENT_SECRET": self.client_secret,
            "OIDC_OP_ISSUER": self.url,
            "OIDC_OP_AUTHORIZATION_ENDPOINT": f"{self.url}/authorize",
            "OIDC_OP_TOKEN_ENDPOINT": f"{self.url}/token",
            "OIDC_OP_USER_ENDPOINT": f"{self.url}/userinfo",
            "OIDC_OP_JWKS_ENDPOINT": f"{self.url}/jwks",
        }

    # --- what the endpoints answer -----------------------------------------------------

    def discovery(self) -> dict[str, Any]:
        return {
            "issuer": self.url,
            "authorization_endpoint": f"{self.url}/authorize",
            "token_endpoint": f"{self.url}/token",
            "userinfo_endpoint": f"{self.url}/userinfo",
            "jwks_uri": f"{self.url}/jwks",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "code_challenge_methods_supported": ["S256"],
        }

    def jwks(self) -> dict[str, Any]:
        jwk = json.loads(RSAAlgorithm.to_jwk(self.key.public_key()))
        return {"keys": [{**jwk, "kid": KID, "alg": "RS256", "use": "sig"}]}

    def authorize(self, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        if query.get("client_id") != self.client_id or query.get("response_type") != "code":
            return 400, {}, b"unknown client or response type"
        code = secrets.token_urlsafe(16)
        self.codes[code] = {"claims": dict(self.claims), "nonce": query.get("nonce"),
                            "redirect_uri": query["redirect_uri"], "challenge": query.get("code_challenge")}
        location = f"{query['redirect_uri']}?{urlencode({'code': code, 'state': query['state']})}"
        return 302, {"Location": location}, b""

    def token(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        grant = self.codes.pop(form.get("code", ""), None)
        if (grant is None or form.get("client_id") != self.client_id
                or form.get("client_secret") != self.client_secret
                or form.get("redirect_uri") != grant["redirect_uri"]):
            return 400, {"error": "invalid_grant"}
        verifier = form.get("code_verifier", "")
        digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        if grant["challenge"] and digest != grant["challenge"]:
            return 400, {"error": "invalid_grant", "error_description": "PKCE verifier does not match"}
        claims = grant["claims"]
        now = int(time.time())
        id_claims = {"iss": self.url, "sub": claims["sub"], "aud": self.audience or self.client_id,
                     "iat": now, "exp": now + 300, "nonce": grant["nonce"]}
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048) if self.forge_signature else self.key
        id_token = jwt.encode(id_claims, key, algorithm="RS256", headers={"kid": KID})
        access_token = secrets.token_urlsafe(24)
        self.tokens[access_token] = claims
        return 200, {"access_token": access_token, "token_type": "Bearer", "expires_in": 300, "id_token": id_token}

    def userinfo(self, authorization: str) -> tuple[int, dict[str, Any]]:
        claims = self.tokens.get(authorization.removeprefix("Bearer ").strip())
        if claims is None:
            return 401, {"error": "invalid_token"}
        return 200, claims

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                if not isinstance(body, bytes):
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                url = urlparse(self.path)
                provider.requests.append(url.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                if url.path == "/.well-known/openid-configuration":
                    self._send(200, provider.discovery())
                elif url.path == "/jwks":
                    self._send(200, provider.jwks())
                elif url.path == "/authorize":
                    status, headers, body = provider.authorize(query)
                    self._send(status, body, headers)
                elif url.path == "/userinfo":
                    self._send(*provider.userinfo(self.headers.get("Authorization", "")))
                else:
                    self._send(404, {"error": "not_found"})

            def do_POST(self) -> None:
                url = urlparse(self.path)
                provider.requests.append(url.path)
                length = int(self.headers.get("Content-Length", "0"))
                form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
                if url.path == "/token":
                    self._send(*provider.token(form))
                else:
                    self._send(404, {"error": "not_found"})

        return Handler
