"""Secrets: text that *is* a credential.

A secret is never stored. In memory the write is refused; in session logs
`redact_secrets` replaces each one with `[REDACTED:<rule>]`. So every rule
here reports both where its finding is and which characters are the secret
itself (`SecretMatch.value_*`): "My password is [REDACTED:secret_disclosure]"
keeps the log readable.

Vendor key formats come from two places: our own patterns, which also
accept the light variations people produce when they paste or retype a key
(spaces or dashes between groups, "-" for "_"), and the provider patterns of
detect-secrets' plugins. detect-secrets' own pipeline costs ~110 ms per
5,000 characters here (it runs 27 plugins line by line, with filters), so
its plugin regexes and its entropy function are used directly, each tried
only where its fixed prefix occurs.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import cast

from detect_secrets.plugins.artifactory import ArtifactoryDetector
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.plugins.cloudant import CloudantDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString
from detect_secrets.plugins.ibm_cloud_iam import IbmCloudIamDetector
from detect_secrets.plugins.ibm_cos_hmac import IbmCosHmacDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.softlayer import SoftlayerDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

from memoryhub.scanning.base import (
    SPOT_LIMIT,
    Finding,
    Phrase,
    Views,
    compile_pattern,
    phrase,
    quote,
    redact,
    views,
)

# pii.py owns the card checks (issuer prefixes, Luhn, "order number" contexts);
# the secret rule reuses them rather than keep a second copy.
from memoryhub.scanning.pii import _ISSUER as _CARD_ISSUER
from memoryhub.scanning.pii import _REFERENCE_BEFORE as _CARD_REFERENCE
from memoryhub.scanning.pii import luhn_valid


@dataclass(frozen=True)
class SecretMatch:
    start: int
    end: int
    # The characters redaction replaces: the value, not the words around it.
    value_start: int
    value_end: int
    detail: str


# Tokens published as documentation's examples, signed with keys printed
# beside them: they open nothing, and every tutorial copies them. Only
# these exact strings; card numbers get no such table (the team's tests
# and a reviewer alike read "4111 1111 1111 1111" as a card someone typed).
PUBLIC_EXAMPLE_JWTS = frozenset(
    (
        # jwt.io's debugger default ({"sub": "1234567890", "name": "John Doe"}, key "your-256-bit-secret").
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIy"
        "fQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
        # PyJWT's README ({"some": "payload"}, key "secret").
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzb21lIjoicGF5bG9hZCJ9.4twFt5NiznN84AWoo1d7KO1T_yoc0Z6XOpOVswacPZg",
    )
)




def _published_example(normalized: str, match: SecretMatch) -> bool:
    return normalized[match.value_start : match.value_end].strip("\"'` ") in PUBLIC_EXAMPLE_JWTS


class SecretRule:
    """A rule whose every match can be redacted. `matches` yields them in
    any order over the normalised text; `find` reports the earliest."""

    name: str
    category = "secret"

    def matches(self, normalized: str) -> Iterator[SecretMatch]:
        raise NotImplementedError

    def find(self, raw: str, normalized: str) -> Finding | None:
        found = (m for m in self.matches(normalized) if not _published_example(normalized, m))
        first = min(found, key=lambda m: (m.start, m.end), default=None)
        if first is None:
            return None
        return Finding(rule=self.name, category=self.category, detail=first.detail, start=first.start, end=first.end)


def _find_all(text: str, literal: str) -> Iterator[int]:
    index = text.find(literal)
    while index != -1:
        yield index
        index = text.find(literal, index + 1)


@dataclass(frozen=True)
class Anchored:
    """A pattern tried only near a fixed literal. `lowered` literals are
    looked up case-insensitively; the pattern decides case itself."""

    literals: tuple[str, ...]
    pattern: re.Pattern[str]
    label: str
    before: int = 0
    after: int = 400
    lowered: bool = False
    # What must follow a literal for its window to be searched at all.
    then: re.Pattern[str] | None = None

    @functools.cached_property
    def _roots(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """The literals grouped by their first three characters, each group
        under the prefix its literals share ("pass" for password, passwd,
        passphrase, pass): one find per group instead of one per literal."""
        groups: dict[str, list[str]] = {}
        for literal in self.literals:
            groups.setdefault(literal[:3] if len(literal) >= 3 else "\0" + literal, []).append(literal)
        roots = []
        for group in groups.values():
            root = group[0]
            for literal in group[1:]:
                while not literal.startswith(root):
                    root = root[:-1]
            roots.append((root, tuple(group)))
        return tuple(roots)

    def _literal_positions(self, haystack: str) -> set[int]:
        """Where a literal starts (and, with `then`, is followed by it)."""
        then = self.then
        found: set[int] = set()
        for root, literals in self._roots:
            for p in _find_all(haystack, root):
                for literal in literals:
                    if haystack.startswith(literal, p) and (then is None or then.match(haystack, p + len(literal))):
                        found.add(p)
                        break
        return found

    def search(self, normalized: str, lower: str) -> Iterator[re.Match[str]]:
        haystack = lower if self.lowered else normalized
        if not self.literals and self.then is None:
            yield from self.pattern.finditer(normalized)
            return
        # With `then`, cheaper than a window search: what must follow the
        # literal.
        yield from self._windows(normalized, sorted(self._literal_positions(haystack)))

    def _windows(self, normalized: str, positions: list[int]) -> Iterator[re.Match[str]]:
        if len(positions) > SPOT_LIMIT:
            # One linear pass instead of thousands of windows.
            yield from (m for m in self.pattern.finditer(normalized) if m.end() > m.start())
            return
        done = 0
        for position in positions:
            if position < done:
                continue
            start = max(done, position - self.before)
            match = self.pattern.search(normalized, start, min(len(normalized), position + self.after))
            if match is not None and match.end() > match.start():
                done = match.end()
                yield match


def _lower(normalized: str) -> str:
    return views(normalized).lower


# --- vendor keys ------------------------------------------------------------------------------

# Between a vendor prefix and the key body people type "-" for "_", add
# spaces, or both ("sk - proj - …", "ghp-…").
_JOIN = r"(?:[ \t]{0,2}[-_][ \t]{0,2}|[ \t]{1,2})"
# A key body, possibly broken by single spaces where it was retyped or
# wrapped; a continuation needs a digit, so a following word is not eaten.
_BODY = r"(?P<body>[A-Za-z0-9_-]{8,300}(?:[ \t](?=[A-Za-z_-]{0,40}\d)[A-Za-z0-9_-]{6,200}){0,3})"


def _random(minimum: int) -> Callable[[str], bool]:
    def check(body: str) -> bool:
        compact = re.sub(r"[\s_-]", "", body)
        # Real keys are random: digits and both cases. "sk-learn-compatible"
        # has neither, and "ask" + 20 letters of prose never gets here.
        return (
            len(compact) >= minimum
            and any(c.isdigit() for c in compact)
            and any(c.isupper() for c in compact)
            and any(c.islower() for c in compact)
        )

    return check


def _any(body: str) -> bool:
    return True


def _sixteen_with_a_digit(body: str) -> bool:
    compact = re.sub(r"[ \t.\-]", "", body)
    return len(compact) == 16 and any(c.isdigit() for c in compact)


_VENDOR_KEYS: tuple[tuple[Anchored, Callable[[str], bool]], ...] = (
    (
        Anchored(
            ("sk",),
            re.compile(
                rf"(?<![A-Za-z0-9])(?i:sk){_JOIN}(?:(?i:ant){_JOIN}(?:(?i:api)\d\d{_JOIN})?"
                rf"|(?i:proj|svcacct|admin){_JOIN})?{_BODY}"
            ),
            "an OpenAI or Anthropic API key",
            lowered=True,
        ),
        _random(20),
    ),
    (
        Anchored(
            ("sk", "rk"),
            re.compile(rf"(?<![A-Za-z0-9])(?i:[sr]k){_JOIN}(?i:live|test){_JOIN}{_BODY}"),
            "a Stripe secret key",
            lowered=True,
        ),
        _random(16),
    ),
    (
        Anchored(
            ("gh", "github"),
            re.compile(rf"(?<![A-Za-z0-9])(?:(?i:gh[pousr])|(?i:github){_JOIN}(?i:pat)){_JOIN}{_BODY}"),
            "a GitHub token",
            lowered=True,
        ),
        _random(30),
    ),
    (
        Anchored(
            ("xox",),
            re.compile(
                r"(?<![A-Za-z0-9])(?i:xox[baprs])[ \t]{0,2}-[ \t]{0,2}"
                r"(?P<body>\d{6,20}(?:[ \t]{0,2}-[ \t]{0,2}[A-Za-z0-9]{4,64}){1,3})"
            ),
            "a Slack token",
            lowered=True,
        ),
        _any,
    ),
    (
        Anchored(
            ("aiza",),
            re.compile(
                r"(?<![A-Za-z0-9_-])AIza[ \t_-]{0,2}(?P<body>[0-9A-Za-z_-]{33,40}"
                r"|[0-9A-Za-z_-]{4,30}(?:[ \t][0-9A-Za-z_-]{2,30}){1,6})(?![0-9A-Za-z_-])"
            ),
            "a Google API key",
            lowered=True,
        ),
        _any,
    ),
    (
        Anchored(
            ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
            re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])(?P<body>[A-Z0-9]{16})(?![A-Za-z0-9])"),
            "an AWS access key id",
        ),
        _any,
    ),
    (
        # "AKIA IOSF ODNN 7EXA MPLE", "AKIA-IOSF-…": groups with separators.
        # A digit is required, so "ASIA PACIFIC REGION HQ" stays prose.
        Anchored(
            ("AKIA", "ASIA", "ABIA", "ACCA"),
            re.compile(
                r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA)(?P<body>(?:[ \t.\-]{1,2}[A-Z0-9]{2,8}){2,8})(?![A-Za-z0-9])"
            ),
            "an AWS access key id",
        ),
        _sixteen_with_a_digit,
    ),
    (
        Anchored(
            ("npm_",), re.compile(r"(?<![A-Za-z0-9])npm_(?P<body>[A-Za-z0-9]{36})(?![A-Za-z0-9])"), "an npm token"
        ),
        _any,
    ),
    (
        Anchored(
            ("_authToken",), re.compile(r"_authToken[ \t]{0,2}=[ \t]{0,2}(?P<body>[^\s\"']{8,200})"), "an npm token"
        ),
        _any,
    ),
    (
        Anchored(
            ("hf_",),
            re.compile(r"(?<![A-Za-z0-9])hf_(?P<body>[A-Za-z0-9]{34,40})(?![A-Za-z0-9])"),
            "a Hugging Face token",
        ),
        _any,
    ),
)  # fmt: skip


class ApiKeyRule(SecretRule):
    """API keys and tokens whose vendor prefix makes them recognisable,
    including the separators people add when they paste or retype one."""

    name = "secret_api_key"

    def matches(self, normalized: str) -> Iterator[SecretMatch]:
        view = views(normalized)
        lower = view.lower
        spaced_aws = any(word in view.words for word in (b"akia", b"asia", b"abia", b"acca"))
        # A Google key broken by spaces or dashes has no long run left.
        if not view.has_token and not spaced_aws and "aiza" not in lower:
            return
        for anchored, plausible in _VENDOR_KEYS:
            for match in anchored.search(normalized, lower):
                if not plausible(match.group("body")):
                    continue
                yield SecretMatch(
                    match.start(),
                    match.end(),
                    match.start(),
                    match.end(),
                    f"Text contains what looks like {anchored.label} ({redact(match.group())}); "
                    "store a reference, not the key.",
                )


# detect-secrets plugins whose patterns are safe to run in a window, with
# the fixed strings their matches contain. The generic ones (keyword, basic
# auth, JWT, private key, npm) are covered by our own rules, whose
# placeholder handling fits prose better; the public-IP plugin is not about
# secrets at all.
_PLUGINS: tuple[tuple[type[RegexBasedDetector], int | None, tuple[str, ...], bool, int, int], ...] = (
    # plugin, which of its patterns (None: all), fixed strings, case-insensitive, window before, window after
    (ArtifactoryDetector, None, ("AKC", "AP"), False, 2, 200),
    # AWS key ids, GitHub, Stripe, Slack bot tokens and OpenAI keys are
    # ApiKeyRule's (with their typed variants); only what it lacks is here.
    (AWSKeyDetector, 1, ("aws",), True, 2, 120),
    (AzureStorageKeyDetector, None, ("AccountKey=",), False, 0, 110),
    (CloudantDetector, None, ("cloudant", "clou", "cl_", "cl-", "clapi", "clkey", "clpw", "clpass", "cltoken"),
     True, 120, 160),
    (GitLabTokenDetector, None, ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "GR1348941", "glcbt-", "glimt-",
                                 "glptt-", "glagent-", "gloas-"), False, 0, 1100),
    (IbmCloudIamDetector, None, ("ibm", "iam", "cloud"), True, 8, 120),
    (IbmCosHmacDetector, None, ("cos", "secret"), True, 12, 120),
    (MailchimpDetector, None, ("-us",), False, 33, 10),
    (PypiTokenDetector, None, ("pypi-AgE",), False, 0, 400),
    (SendGridDetector, None, ("SG.",), False, 0, 80),
    (SlackDetector, 1, ("hooks.slack.com",), False, 10, 300),
    (SoftlayerDetector, None, ("softlayer", "sl_", "sl-", "slapi", "slkey", "slpass", "sltoken", "slpwd"),
     True, 20, 160),
    (SquareOAuthDetector, None, ("sq0csp-",), False, 0, 60),
    (TwilioKeyDetector, None, ("AC", "SK"), False, 0, 40),
    # No fixed string to look for: these two run over the whole text, and
    # start with a character class that `re` skips through quickly.
    (DiscordBotTokenDetector, None, (), False, 0, 0),
    (TelegramBotTokenDetector, None, (), False, 0, 0),
)  # fmt: skip

def _provider_patterns() -> tuple[tuple[Anchored, str], ...]:
    patterns = []
    for plugin, index, literals, lowered, before, after in _PLUGINS:
        # Class attributes on the plugins, typed as instance properties.
        secret_type = cast(str, plugin.secret_type)
        denylist = cast("tuple[re.Pattern[str], ...]", plugin.denylist)
        for number, pattern in enumerate(denylist):
            if index is None or index == number:
                anchored = Anchored(literals, pattern, secret_type, before=before, after=after, lowered=lowered)
                patterns.append((anchored, secret_type))
    return tuple(patterns)


_PROVIDER_PATTERNS = _provider_patterns()


def _provider_value(match: re.Match[str]) -> tuple[int, int]:
    # The plugins capture the secret in group 1 when their pattern also
    # matches its surroundings ("aws_secret = '…'").
    for group in range(1, (match.re.groups or 0) + 1):
        value = match.group(group)
        if value and len(value) >= 8:
            return match.span(group)
    return match.span()


class ProviderTokenRule(SecretRule):
    """Provider credentials as detect-secrets' plugins recognise them: GitLab,
    Twilio, SendGrid, Mailchimp, Square, PyPI, Azure, IBM, Discord, Telegram …"""

    name = "secret_provider_token"

    def matches(self, normalized: str) -> Iterator[SecretMatch]:
        view = views(normalized)
        if not view.has_token:
            return
        lower = view.lower
        for anchored, secret_type in _PROVIDER_PATTERNS:
            for match in anchored.search(normalized, lower):
                value_start, value_end = _provider_value(match)
                value = normalized[value_start:value_end]
                # Artifactory's "AP…" and Twilio's "AC…"/"SK…" prefixes also
                # start ordinary capitalised words; a key has digits.
                if not any(c.isdigit() for c in value):
                    continue
                yield SecretMatch(
                    value_start,
                    value_end,
                    value_start,
                    value_end,
                    f"Text contains what detect-secrets recognises as a {secret_type} ({redact(value)}); "
                    "store a reference, not the credential.",
                )


# --- private keys and JWTs ----------------------------------------------------------------------

# Every PEM (and SSH2) block that holds key material: any "PRIVATE KEY"
# (RSA, EC, DSA, OPENSSH, ENCRYPTED, PGP … BLOCK), and any block whose
# label says SECRET or ENCRYPTED. Certificates and public keys are public.
_PEM_LABEL = (
    r"(?:(?:[A-Z0-9]{1,20}[ _]){0,4}PRIVATE[ _]KEY(?:[ _]BLOCK)?|(?:[A-Z0-9]{1,20}[ _]){0,4}(?:SECRET|ENCRYPTED)"
    r"(?:[ _][A-Z0-9]{1,20}){0,4})"
)
_PEM_HEADER = compile_pattern(r"-{3,6}[ ]{0,2}BEGIN[ _]{1,2}" + _PEM_LABEL + r"[ ]{0,2}-{3,6}")
_PEM_FOOTER = compile_pattern(r"-{3,6}[ ]{0,2}END[ _]{1,2}" + _PEM_LABEL + r"[ ]{0,2}-{3,6}")
_PUTTY = compile_pattern(r"\bPuTTY-User-Key-File-\d{1,2}:")


class PrivateKeyRule(SecretRule):
    """PEM and PuTTY private keys. The header alone is refused: a truncated
    key in memory is still a key someone meant to paste. Redaction takes the
    whole block, to its footer or to the end of the text."""

    name = "secret_private_key"

    def matches(self, normalized: str) -> Iterator[SecretMatch]:
        lower = _lower(normalized)
        done = 0
        for literal, header_pattern, label in (
            ("---", _PEM_HEADER, "a private key block"),
            ("putty-user-key-file-", _PUTTY, "a PuTTY private key"),
        ):
            for position in _find_all(lower, literal):
                if position < done:
                    continue
                header = header_pattern.match(normalized, position)
                if header is None:
                    continue
                if label == "a PuTTY private key":
                    end = len(normalized)
                else:
                    footer = _PEM_FOOTER.search(normalized, header.end())
                    end = footer.end() if footer is not None else len(normalized)
                done = end
                yield SecretMatch(
                    header.start(),
                    header.end(),
                    header.start(),
                    end,
                    # The PEM header names the key type and holds no key material.
                    f'Text contains {label} ("{quote(header.group(), 50)}"); private keys never belong in memory.',
                )
            done = 0


# A JWT's header is base64url JSON: "eyJ" for '{"', "eyA" for '{ ', "ewo"
# or "ew0K" for a line break. Signed (three parts), unsigned (alg "none",
# the third part empty) and encrypted (five parts) tokens all count, once
# the header decodes to JSON naming "alg" or "typ".
_JWT = Anchored(
    ("eyJ", "eyA", "ewo", "ew0"),
    re.compile(
        r"(?<![A-Za-z0-9_-])(?P<header>e[yw][A-Za-z0-9_-]{6,4000})\.[A-Za-z0-9_-]{2,4000}\.[A-Za-z0-9_-]{0,4000}"
        r"(?:\.[A-Za-z0-9_-]{0,4000}\.[A-Za-z0-9_-]{0,4000})?"
    ),
    "a JSON Web Token",
    after=20_100,
)


def _jwt_header(segment: str) -> bool:
    try:
        raw = base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
    except (binascii.Error, ValueError):
        return False
    text = raw.decode("utf-8", "replace").lstrip()
    return text.startswith("{") and ('"alg"' in text or '"typ"' in text or '"enc"' in text)


class JwtRule(SecretRule):
    """JSON Web Tokens: the header is base64url JSON, so it starts "eyJ"."""

    name = "secret_jwt"

    def matches(self, normalized: str) -> Iterator[SecretMatch]:
        if not views(normalized).has_token:
            return
        for match in _JWT.search(normalized, normalized):
            if not _jwt_header(match.group("header")):
                continue
            yield SecretMatch(
                match.start(),
                match.end(),
                match.start(),
                match.end(),
                f"Text contains what looks like a JSON Web Token ({redact(match.group())}); "
                "tokens never belong in memory.",
            )


# --- assignments ----------------------------------------------------------------------------------

_ASSIGNMENT_KEYS = (
    "password", "passwd", "passphrase", "secret", "token", "bearer", "api_key", "api-key", "apikey", "access_key",
    "access-key", "private_key", "private-key", "client_secret", "pwd", "pass",
)  # fmt: skip
_ASSIGNMENT = Anchored(
    _ASSIGNMENT_KEYS,
    compile_pattern(
        r"(?<![A-Za-z0-9])(?P<key>(?:[A-Za-z0-9]{1,30}[_.-]){0,4}"
        r"(?:password|passwd|passphrase|secret|token|bearer|api[_-]?key|apikey|access[_-]?key|secret[_-]?key"
        r"|private[_-]?key|client[_-]?secret|auth[_-]?token|access[_-]?token|refresh[_-]?token)"
        # "pwd" and "pass" alone are a shell command and a verb; DB_PWD is not.
        r"|(?:[A-Za-z0-9]{1,30}[_-]){1,4}(?:pwd|pass))"
        r"[*_\"']{0,3}[ \t]{0,4}(?::=|=>|==?|:)[*_]{0,3}[ \t]{0,4}"
        r"(?:\"(?P<dq>[^\"\n]{1,200})\"|'(?P<sq>[^'\n]{1,200})'|`(?P<bq>[^`\n]{1,200})`|(?P<bare>[^\s\"'`,;]{1,200}))"
    ),
    "an assignment",
    before=130,
    after=480,
    lowered=True,
    # The rest of the key, then an assignment operator.
    then=re.compile(r"[a-z0-9_.-]{0,60}[*_\"']{0,3}[ \t]{0,4}(?::|=)"),
)
# Values that stand for a secret without being one.
PLACEHOLDER = compile_pattern(
    r"[<\[({].*[>\])}]|[*x•.#_-]+|\$\{?\w+\}?|\$\(.*|%\(?\w+\)?s?"
    r"|redacted|hidden|removed|omitted|masked|censored|placeholder|none|null|nil|undefined|empty|unset"
    r"|true|false|yes|no|required|optional|changeme|change[_-]?me|replace[_-]?me|example|sample|dummy|string"
    r"|(?:mock|fake|dummy)(?:[_-]\w+)?"
    r"|secret|password|token|your[_-].*|.*[_-]here|(?:env|vault|op|ssm|secrets?):.*"
    r"|(?:os\.environ|os\.getenv|getenv|environ|process\.env|import\.meta\.env|env|settings|config|secrets|vars"
    r"|ENV)\b.*"
)
# A bare value that is code, not a literal: a call, a subscript or an
# attribute chain (`get_password()`, `request.POST[...]`, `self.token`), or a
# snake_case name (`new_password`).
_CODE_VALUE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*[(\[].*|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|[a-z]+(?:_[a-z]+)+")
_URL_VALUE = re.compile(r"[a-z][a-z0-9+.-]*://[^@]*", re.IGNORECASE)
_MIN_SECRET_CHARS = 6
_BADGE_QUERY = re.compile(r"\.(?:svg|png)\?$")


class PasswordAssignmentRule(SecretRule):
    """A credential-looking name assigned a literal: `password = hunter2`,
    `"api_key": "…"`, `DB_PASSWORD=…`.

    Deciding whether the value is real needs a few checks a regex cannot
    express readably, so candidates are filtered in Python.
    """

    name = "secret_password_assignment"

    def matches(self, normalized: str) -> Iterator[SecretMatch]:
        for match in _ASSIGNMENT.search(normalized, _lower(normalized)):
            value_group = next(g for g in ("dq", "sq", "bq", "bare") if match.group(g) is not None)
            value = match.group(value_group)
            # Codecov's badge token sits in every README's badge URL: it
            # only shows a public graph, by design.
            if _BADGE_QUERY.search(normalized, max(0, match.start() - 8), match.start()):
                continue
            if not _looks_like_a_secret(
                value, quoted=value_group != "bare", rest=normalized[match.end() : match.end() + 3]
            ):
                continue
            yield SecretMatch(
                match.start(),
                match.end(),
                *match.span(value_group),
                f'Text assigns a literal value to "{quote(match.group("key"), 40)}" ({redact(value.strip())}); '
                "credentials never belong in memory.",
            )


def _looks_like_a_secret(value: str, *, quoted: bool, rest: str) -> bool:
    stripped = value.strip()
    if len("".join(stripped.split())) < _MIN_SECRET_CHARS:
        return False
    if PLACEHOLDER.fullmatch(stripped) or _URL_VALUE.fullmatch(stripped):
        return False
    # Numbers next to "token" are budgets and counts ("max_tokens=128000")
    # far more often than PINs.
    if stripped.isdigit():
        return False
    if quoted:
        return True
    if _CODE_VALUE.fullmatch(stripped):
        return False
    # "Secret: stored in Vault" is a sentence, not an assignment: a bare
    # word of letters followed by more words reads as prose.
    return not (stripped.isalpha() and re.match(r"[ \t]+\w", rest) is not None)


# --- credentials in URLs ------------------------------------------------------------------------

_URL_CREDENTIALS = Anchored(
    ("://",),
    compile_pattern(
        r"(?<![a-z0-9+.-])[a-z][a-z0-9+.-]{1,30}://(?P<user>[^\s:/?#@\[\]\"'<>`]{0,128}):"
        r"(?P<password>[^\s/?#@\"'<>`]{1,256})@[^\s/?#:\"'<>`@]{1,253}"
    ),
    "a URL with a password",
    before=35,
    after=700,
)
_URL_PLACEHOLDER = compile_pattern(
    r"\$\{?\w+\}?|\{\{?\s*\w+\s*\}?\}|%\(?\w+\)?s?|<[^>]*>|\[[^\]]*\]|[*x•.#_-]+|:?(?:password|passwd|pass|pwd|secret"
    r"|changeme|redacted|placeholder|example|token|xxx+)"
)


class UrlCredentialsRule(SecretRule):
    """`postgres://admin:S3cretPass@db/prod`: a password inside a URL."""

    name = "secret_url_credentials"

    def matches(self, normalized: str) -> Iterator[SecretMatch]:
        for match in _URL_CREDENTIALS.search(normalized, normalized):
            password = match.group("password")
            if _URL_PLACEHOLDER.fullmatch(password):
                continue
            yield SecretMatch(
                match.start(),
                match.end(),
                *match.span("password"),
                f"Text contains a URL with a password for \"{quote(match.group('user'), 30)}\" "
                f"({redact(password)}); store a reference, not the credential.",
            )


# --- high-entropy strings -------------------------------------------------------------------------

_ENTROPY = Base64HighEntropyString()
_QUOTED_BLOB = re.compile(r"([\"'`])([A-Za-z0-9+/=_-]{20,500})\1")


class HighEntropyStringRule(SecretRule):
    """A quoted string of base64 characters as random as a key, by
    detect-secrets' own entropy measure and default limit (4.5 bits)."""

    name = "secret_high_entropy"

    def matches(self, normalized: str) -> Iterator[SecretMatch]:
        if not views(normalized).has_token:
            return
        for match in _QUOTED_BLOB.finditer(normalized):
            value = match.group(2)
            if _ENTROPY.calculate_shannon_entropy(value) <= _ENTROPY.entropy_limit:
                continue
            yield SecretMatch(
                match.start(2),
                match.end(2),
                match.start(2),
                match.end(2),
                f"Text contains a quoted random-looking string ({redact(value)}), the shape of a key or token; "
                "store a reference, not the value.",
            )


# --- named values: "<name> key/token/password is <value>" ---------------------------------------------

_NAMED_VALUE = Anchored(
    ("key", "token", "password", "passwd", "secret", "passphrase", "credential"),
    compile_pattern(
        r"\b(?P<noun>(?:api[ _-]?)?keys?|tokens?|passwords?|passwd|secrets?|passphrases?|credentials?)\b"
        r"(?:\s{1,3}(?:for|of|to|on|at)\s{1,3}[\w.-]{1,30}){0,1}\s{0,3}(?:is(?:\s+now|\s+still)?|was|=|:|->|=>|reads"
        r"|will\s+be|should\s+be|lautet|ist|es|est)\s{0,3}[`\"'\u201c]?"
        r"(?P<value>[A-Za-z0-9][A-Za-z0-9_\-./+=~]{11,199})(?<![.,])"
    ),
    "a named secret",
    before=0,
    after=280,
    lowered=True,
)
# A vendor-like key: a short lowercase prefix, maybe a second one, then the
# random part ("acme-prod-7f8a…", "dd-api-4f9c…", "hvs.CAES…").
_DIGIT = re.compile(r"\d")
_VENDOR_SHAPE = re.compile(r"[A-Za-z]{2,12}[-_.](?:[A-Za-z]{2,12}[-_.]){0,2}[A-Za-z0-9]{10,}")


def _secret_value(value: str) -> bool:
    if PLACEHOLDER.fullmatch(value) or _URL_VALUE.fullmatch(value) or "/" in value.strip("/"):
        return False
    letters = sum(c.isalpha() for c in value)
    digits = sum(c.isdigit() for c in value)
    if not letters or not digits:
        return False
    if _VENDOR_SHAPE.fullmatch(value):
        return True
    return float(_ENTROPY.calculate_shannon_entropy(value)) >= 3.0


class NamedSecretRule(SecretRule):
    """"<name> key/token/password is <value>" for any random-looking value,
    vendor-like prefixes included ("the acme deploy key is acme-prod-7f8a…"):
    keys of services nobody here has heard of have no known shape, but their
    owners name them."""

    name = "secret_named_value"

    def matches(self, normalized: str) -> Iterator[SecretMatch]:
        if not views(normalized).long_word and _DIGIT.search(normalized) is None:
            return
        for match in _NAMED_VALUE.search(normalized, _lower(normalized)):
            value = match.group("value")
            if not _secret_value(value):
                continue
            yield SecretMatch(
                match.start(),
                match.end(),
                *match.span("value"),
                f'Text names a {match.group("noun").lower()} and gives its value ({redact(value)}); '
                "secrets never belong in memory or logs.",
            )


# --- payment card numbers ------------------------------------------------------------------------

# Eight digits with at most one separator among them sit in every card
# layout people write (4-4-4-4, 4-6-5, 8-8, unbroken).
_CARD_HINT = re.compile(r"\d\d\d\d[ -]?\d\d\d\d")
_CARD = re.compile(r"(?<![\w+.,/\\-])\d(?:[ -]?\d){12,18}(?![\w/\\-]|[.,]\d)")


class CardNumberRule(SecretRule):
    """A full payment card number (Luhn-valid, with an issuer prefix),
    written with or without spaces or dashes, in any grouping: a card
    number in agent memory is a PCI-DSS breach whatever the workspace's
    personal-data policy says about other identifiers."""

    name = "secret_card_number"

    def matches(self, normalized: str) -> Iterator[SecretMatch]:
        done = 0
        for hint in _CARD_HINT.finditer(normalized):
            if hint.start() < done:
                continue
            # Only around the hint: a card is at most 19 digits and 6 separators.
            match = _CARD.search(normalized, max(done, hint.start() - 25), hint.end() + 30)
            if match is None:
                done = hint.end()
                continue
            done = match.end()
            run = match.group()
            if len(set(re.findall(r"[ -]", run))) > 1:
                continue
            digits = re.sub(r"[ -]", "", run)
            if not (13 <= len(digits) <= 19 and _CARD_ISSUER.fullmatch(digits) and luhn_valid(digits)):
                continue
            before = normalized[max(0, match.start() - 30) : match.start()]
            # An order number, or a phone number after its country code.
            if _CARD_REFERENCE.search(before) or re.search(r"\+\d{1,4}[ -]?$", before):
                continue
            yield SecretMatch(
                match.start(),
                match.end(),
                match.start(),
                match.end(),
                f"Text contains a payment card number (…{digits[-4:]}, Luhn-valid); card numbers never belong in "
                "memory.",
            )


# --- natural-language disclosures ------------------------------------------------------------------
#
# "My password is Tr0ub4dor&3", "das WLAN-Passwort lautet sonnenschein99",
# "密码是abc123". These rules read the folded view (so "p@ssw0rd" counts),
# and judge the value in the normalised text.

# A value: quoted (spaces allowed inside), or one run of non-space characters.
_VALUE = r"(?:[\"'`](?P<quoted>[^\"'`\n]{3,128})[\"'`]|(?P<value>[^\s\"'`]{3,128}))"
_ZH_VALUE = r"(?:[\"'`](?P<quoted>[^\"'`\n]{3,128})[\"'`]|(?P<value>[\x21-\x7e]{3,128}))"
_VERB_EN = (
    r"[ \t]{0,3}(?:is\s+now|is\s+still|is\s+currently|is\s+set\s+to|has\s+been\s+(?:changed|set|updated|reset)\s+to"
    r"|(?:was\s+)?(?:changed|set|updated|reset)\s+to|will\s+be|should\s+be|is|was|are|reads|remains|=|:|->|=>|-)"
    r"[ \t]{0,3}"
)
_QUALIFIER_EN = (
    r"(?:\s{1,3}(?:for|to|of|on|at|in|from)\s{1,3}[^\s.,;:!?]{1,30}(?:\s{1,3}[^\s.,;:!?=]{1,30}){0,2}?"
    r"|\s{1,3}(?:that\s+|which\s+)?(?:i|we|you|he|she|they)\s+(?:use|used|chose|picked|set|have|had|gave(?:\s+(?:you"
    r"|me))?|told\s+(?:you|me)|texted(?:\s+me)?|sent(?:\s+me)?|emailed(?:\s+me)?)(?:\s+\w{1,15}){0,2}?"
    r"|\s{1,3}(?:everywhere|here|there|now|today|too|also|again|currently|btw))?"
)
_NOUN_EN = (
    r"(?P<noun>(?:(?:wi-?fi|wlan|wireless|network|router|guest|card|debit\s+card|credit\s+card|bank|atm|account"
    r"|online\s+banking|e-?mail|admin|administrator|root|login|master|vault|laptop|computer|phone|door|alarm|gate"
    r"|safe|locker|voicemail|sim|backup|recovery|app|portal|server|database|db|vpn|ssh|gmail|outlook|icloud"
    r"|netflix|amazon|paypal|office|home|house|building|visa|mastercard|new|current|old|temporary|real|actual)"
    r"\s{1,3}){0,3}"
    r"(?:passwords?|passcodes?|pass\s+code|passphrases?|pass\s+phrase|pins?|pin\s+(?:code|number)|pwd?|login\s+code"
    r"|access\s+code|door\s+code|alarm\s+code|gate\s+code|security\s+code|unlock\s+code|otp|one[- ]time\s+code"
    r"|verification\s+code|2fa\s+code|auth(?:entication)?\s+code|cvv2?|cvc|security\s+answer|secret\s+answer"
    r"|answer\s+to\s+(?:my|the)\s+security\s+question|memorable\s+(?:word|information)|mother'?s\s+maiden\s+name"
    r"|(?:recovery|seed)\s+phrase|recovery\s+code|backup\s+code|safe\s+combination"
    r"|(?P<strict>api\s+key|access\s+key|secret\s+key|private\s+key|access\s+token|bearer\s+token|auth\s+token"
    r"|api\s+token|client\s+secret|token|secret)))"
)
_NOUN_DE = (
    r"(?P<noun>(?:wlan|wifi|w-lan|router|karten|bank|konto|e-?mail|admin|handy|tur|online-?banking|gaste)?[- ]?"
    r"(?:passwort|kennwort|pin|pin-code|pincode|pin-nummer|geheimzahl|zugangscode|turcode|sicherheitsantwort"
    r"|passphrase|sicherheitscode|tan|alarmcode|tresorcode|entsperrcode))"
)
_NOUN_ES = (
    r"(?P<noun>contrasena|contrasenas|clave|pin|codigo\s+pin|numero\s+pin|codigo\s+de\s+(?:acceso|seguridad"
    r"|(?:la\s+)?alarma|(?:la\s+)?puerta|desbloqueo|verificacion|(?:la\s+)?caja\s+fuerte|(?:la\s+)?wifi)"
    r"|respuesta\s+de\s+seguridad|frase\s+de\s+paso|frase\s+secreta)"
)
_NOUN_FR = (
    r"(?P<noun>mot\s+de\s+passe|mdp|code\s+pin|code\s+secret|code\s+d'acces|code\s+wifi|code\s+du\s+wifi"
    r"|code\s+de\s+l'alarme|code\s+de\s+la\s+porte|code\s+du\s+coffre|digicode"
    r"|code\s+de\s+la\s+carte|code\s+confidentiel|pin|phrase\s+secrete|phrase\s+de\s+passe|reponse\s+secrete)"
)
_DISCLOSURE_STEMS_EN = (
    "password passwords passcode passcodes pass passphrase passphrases pin pins pw pwd login access door alarm gate "
    "security unlock otp one verification 2fa auth authentication cvv cvv2 cvc secret answer memorable mother "
    "mothers recovery seed backup safe api private bearer token client"
)

_DISCLOSURES: tuple[Phrase, ...] = (
    phrase(
        _DISCLOSURE_STEMS_EN,
        _NOUN_EN + r"\b" + _QUALIFIER_EN + _VERB_EN + _VALUE,
        "disclose a password",
        vocabulary="password passcode passphrase pin code wifi is",
    ),
    phrase(
        ("passwort", "kennwort", "pin", "geheimzahl", "zugangscode", "turcode", "sicherheitsantwort", "passphrase",
         "sicherheitscode", "tan", "wlan", "wifi", "router", "karten", "bank", "konto", "email", "e", "admin",
         "handy", "tur", "online", "gaste", "alarmcode", "tresorcode", "entsperrcode"),
        _NOUN_DE + r"(?:\s{1,3}(?:fur|vom|von|zum|zur|des|der|meines|meiner|unseres)\s{1,3}[^\s.,;:!?]{1,30}"
        r"(?:\s{1,3}[^\s.,;:!?=]{1,30}){0,1}?)?[ \t]{0,3}(?:ist|lautet|war|heisst|heißt|=|:)[ \t]{0,3}" + _VALUE,
        "disclose a password",
        vocabulary="passwort kennwort ist lautet",
    ),  # fmt: skip
    phrase(
        "contrasena contrasenas clave pin codigo numero respuesta frase",
        _NOUN_ES + r"(?:\s{1,3}(?:del|de\s+la|de\s+mi|de|para)\s{1,3}[^\s.,;:!?]{1,30}"
        r"(?:\s{1,3}[^\s.,;:!?=]{1,30}){0,1}?)?[ \t]{0,3}(?:es|era|sera|=|:)[ \t]{0,3}" + _VALUE,
        "disclose a password",
        vocabulary="contrasena clave es",
    ),
    phrase(
        "mot mdp code pin phrase reponse digicode",
        _NOUN_FR + r"(?:\s{1,3}(?:du|de\s+la|de\s+mon|de\s+ma|de|pour)\s{1,3}[^\s.,;:!?]{1,30}"
        r"(?:\s{1,3}[^\s.,;:!?=]{1,30}){0,1}?)?[ \t]{0,3}(?:est|etait|c'est|=|:)[ \t]{0,3}" + _VALUE,
        "disclose a password",
        vocabulary="mot de passe est",
    ),
    phrase(
        ("密码", "口令", "密钥", "验证码", "答案", "pin"),
        r"(?P<noun>密码|口令|pin码|pin|密钥|安全问题答案|密保答案|密保问题答案|验证码|答案)"
        r"\s{0,2}(?:是|为|:|=|就是|改成了|改为|设置为|设为)\s{0,2}" + _ZH_VALUE,
        "disclose a password",
    ),
    # "hunter2 is my password", "Tr0ub4dor&3 ist mein Passwort".
    phrase(
        "password passcode pin passwort kennwort contrasena mot",
        r"(?P<quoted>(?!))?[\"'`]?(?P<value>[^\s\"'`]{3,64})[\"'`]?\s{1,3}(?:is|was|ist|war|es|est)\s{1,3}"
        r"(?:my|our|the|mein|meine|unser|das|mi|la|nuestra|mon|le|notre)\s{1,3}(?:new\s+|neues\s+|nueva\s+|nouveau\s+)?"
        r"(?P<noun>password|passcode|pin|passwort|kennwort|contrasena|mot\s+de\s+passe)\b",
        "disclose a password",
        before=90,
        after=40,
    ),
)

# Words that follow "password is" in ordinary sentences about passwords.
_NOT_A_VALUE_WORDS = """
    a an the is not no now still being been be required needed mandatory optional reset changed expired expiring
    expires correct incorrect incorrectly wrong invalid valid weak strong secure insecure safe unsafe too very
    stored saved kept written printed sent shown hidden encrypted hashed masked salted unknown forgotten lost locked
    blocked missing empty blank set unset ok okay fine good bad short long simple easy hard complex temporary new old
    default generated random unique personal private confidential secret known what which how where when why who
    whose something anything nothing everything there here this that these those it its one two three four five six
    seven eight nine ten twelve digits characters letters case-sensitive case only also just always never usually
    probably maybe about like for to of and or but if so as by with without from under over due in on at into
    updated requested entered typed asked given provided verified confirmed accepted rejected declined working
    broken compromised leaked stolen tied linked attached associated same identical similar different available
    pending needed managed rotated handled shared protected case-insensitive enabled disabled active inactive
    their your my our his her its used useless obsolete outdated supposed meant going included attached printed
    listed noted saved ready done gone fixed sent texted emailed displayed known unchanged
    ist nicht falsch richtig korrekt abgelaufen geandert zuruckgesetzt gesperrt vergessen unbekannt neu alt sicher
    unsicher zu noch schon der die das ein eine gleich dieselbe geheim erforderlich notwendig leer gultig ungultig
    weg hier dort im bei auf mit per jetzt nun sehr lang kurz stark schwach mein meine dein deine
    es incorrecta incorrecto correcta correcto caducada caducado cambiada cambiado restablecida restablecido
    olvidada olvidado bloqueada bloqueado nueva nuevo segura seguro obligatoria obligatorio la el un una muy
    demasiado igual misma mismo secreta secreto valida invalida vacia de con por para ahora todavia mi tu su lo
    est pas incorrect incorrecte correcte expire change modifie reinitialise oublie bloque nouveau nouvelle
    securise obligatoire le les une tres trop meme valide invalide vide dans sur chez avec pour maintenant encore
    toujours requis mon ma ton ta son sa perdu
    """
_NOT_A_VALUE = frozenset(_NOT_A_VALUE_WORDS.split())
_UNIT = compile_pattern(
    r"\s{0,3}(?:\+\s{0,2})?(?:characters?|chars?|digits?|letters?|numbers?|symbols?|words?|long|zeichen|stellen"
    r"|ziffern|caracteres|digitos|chiffres|lettres|位|个字符|characters)\b"
)
_ZH_NOT_A_VALUE = (
    "什么", "多少", "正确", "错误", "重置", "过期", "一样", "相同", "必填", "必需", "保密", "忘记", "锁定",
)  # fmt: skip
_TRAILING = ".,;:!?)]}>\"'`。，；：！？"


def _disclosed_value(match: re.Match[str], view: Views) -> tuple[int, int] | None:
    """The normalised span of the value a disclosure gives, or None when the
    words after "password is" are not one ("… is required", "… is 12
    characters long", "… is on the fridge")."""
    group = "quoted" if match.group("quoted") is not None else "value"
    start, end = view.span(*match.span(group))
    text = view.normalized
    # A command-line option ("--password-file, --files-from") names a
    # setting; it gives no value away.
    opening = view.span(match.start(), match.end())[0]
    if text[max(0, opening - 1) : opening] == "-":
        return None
    value = text[start:end]
    if PLACEHOLDER.fullmatch(value.rstrip(".,;:!?")):
        return None
    if group == "quoted":
        # A quoted value is a value, whatever it looks like.
        return (start, end) if value.strip() and not PLACEHOLDER.fullmatch(value.strip()) else None
    while value and value[-1] in _TRAILING:
        value = value[:-1]
        end -= 1
    if len(value) < 3 or value.lower() in _NOT_A_VALUE or PLACEHOLDER.fullmatch(value):
        return None
    if value.startswith(_ZH_NOT_A_VALUE) or _URL_VALUE.match(value) or value.startswith(("[REDACTED", "[BLOCKED")):
        return None
    # "pwd: /home/deploy/app" is a working directory; "password =
    # get_password()" is code.
    if re.match(r"(?:~|\.{1,2})?/|[A-Za-z]:\\", value) or _CODE_VALUE.fullmatch(value):
        return None
    rest = text[end : end + 40]
    digits = sum(c.isdigit() for c in value)
    noun = match.group("noun").lower()
    if "strict" in match.groupdict() and match.group("strict"):
        # "the token is expired" vs "the API key is 8f3kZ0pQ…": a key must
        # look random.
        return (start, end) if len(value) >= 12 and digits and any(c.isalpha() for c in value) else None
    if digits and not any(c.isalpha() for c in value):
        # "PIN is 4471-9920" yes, "password is 12 characters long" no.
        if _UNIT.match(rest):
            return None
        return (start, end) if digits >= 4 or (digits == 3 and noun in {"cvv", "cvc", "cvv2"}) else None
    wordish = re.fullmatch(r"[^\W\d_]+(?:['-][^\W\d_]+)*", value) is not None
    if not wordish:
        return None if _UNIT.match(rest) else (start, end)
    if any(part in _NOT_A_VALUE for part in re.split(r"['-]", value.lower())):
        return None
    # A bare word: a secret when the sentence ends with it, or it is quoted,
    # or it is camel-cased ("CorrectHorse"); "is stored in Vault" is prose.
    quoted = start > 0 and text[start - 1] in "\"'`"
    camel = any(a.islower() and b.isupper() for a, b in zip(value, value[1:], strict=False))
    ends = rest == "" or rest[0] in _TRAILING or rest.lstrip().startswith(("and ", "but ", "so ", "und ", "aber "))
    return (start, end) if quoted or camel or ends else None


class SecretDisclosureRule(SecretRule):
    """A password, PIN, passcode, passphrase, wifi password or security
    answer given in a sentence, in English, German, Spanish, French or
    Chinese."""

    name = "secret_disclosure"

    def matches(self, normalized: str) -> Iterator[SecretMatch]:
        view = views(normalized)
        active = view.active
        for candidate in _DISCLOSURES:
            if id(candidate) not in active:
                continue
            for match in candidate.matches(view):
                value = _disclosed_value(match, view)
                if value is None:
                    continue
                start, end = view.span(match.start(), match.end())
                # (Codecov's public badge token, as in PasswordAssignmentRule.)
                if _BADGE_QUERY.search(normalized, max(0, start - 8), start):
                    continue
                yield SecretMatch(
                    min(start, value[0]),
                    max(end, value[1]),
                    *value,
                    f'Text gives away a {quote(match.group("noun"), 30)} ({redact(normalized[value[0] : value[1]])}); '
                    "secrets never belong in memory or logs.",
                )


def secret_spans(rules: Iterable[SecretRule], normalized: str) -> list[tuple[int, int, str]]:
    """Every secret's value span in the normalised text, with its rule,
    overlapping spans merged; of rules that start at the same place, the
    first in `rules` names the merge."""
    spans = sorted(
        (match.value_start, order, match.value_end, rule.name)
        for order, rule in enumerate(rules)
        for match in rule.matches(normalized)
        if not _published_example(normalized, match)
    )
    merged: list[tuple[int, int, str]] = []
    for start, _order, end, name in spans:
        if merged and start < merged[-1][1]:
            last = merged[-1]
            merged[-1] = (last[0], max(last[1], end), last[2])
        else:
            merged.append((start, end, name))
    return merged
