"""The memory scanner: every write to agent memory passes it, and context
assembly runs it again before stored text reaches a model.

Memory is untrusted input. Whatever an agent, an admin or consolidation
writes is later pasted into some agent's prompt, so the scanner refuses text
that tries to steer that agent (prompt injection, agent-directed
instructions), to move credentials or conversations out (exfiltration),
that *is* a credential (secrets), or that hides characters from the human who
reviews it (invisible and bidi Unicode). Personal data with a checksum
(IBANs, cards, national ids) is reported apart, by `scan_pii`: what happens
to it is a workspace policy, not a refusal.

Entry points:
- `scan(text)`: the first finding in RULES order, or None.
- `scan_all(text)`: every rule's first finding, for reviewers.
- `scan_pii(text)`: every PII occurrence.
- `scan_personal(text)`: every special category of personal data (the
  checksum formats, and health, official ids, relatives' contact data and
  protected traits said in words), each finding's rule a key of
  `scanning.pii.SPECIAL_CATEGORY`.
- `redact_secrets(text)`: the text with each secret replaced by
  `[REDACTED:<rule>]`, for session logs, which are stored, not refused.

Results are memoised per (content digest, RULES_VERSION) in a bounded
in-process LRU: stored versions are immutable, so a version is scanned once
per process however often context assembly, search and the review console
look at it. RULES_VERSION changes whenever a rule does (a test pins it to a
fingerprint of the rule modules), so frozen session snapshots stamped with an
older version can be re-checked.

The rules live in `memoryhub.scanning`, pure Python without Django, readable
one module per class of threat; see docs/scanner.md for what each catches
and misses, with measured rates.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from memoryhub.scanning import decoding, pii, structure
from memoryhub.scanning.base import Finding, Rule, normalize
from memoryhub.scanning.directives import (
    AccessPlantingRule,
    AgentDirectiveRule,
    CommandAndControlRule,
)
from memoryhub.scanning.exfiltration import (
    ConversationForwardingRule,
    CredentialExfiltrationRule,
    MarkupExfiltrationRule,
    SecretFileAccessRule,
)
from memoryhub.scanning.injection import (
    ConcealmentRule,
    FakeRoleMarkerRule,
    HiddenInstructionRule,
)
from memoryhub.scanning.secrets import (
    ApiKeyRule,
    CardNumberRule,
    HighEntropyStringRule,
    JwtRule,
    NamedSecretRule,
    PasswordAssignmentRule,
    PrivateKeyRule,
    ProviderTokenRule,
    SecretDisclosureRule,
    SecretRule,
    UrlCredentialsRule,
    secret_spans,
)
from memoryhub.scanning.structure import (
    Directive,
    InjectedInstructionRule,
    InstructionOverrideRule,
    PromptDisclosureRule,
    RoleHijackRule,
)
from memoryhub.scanning.unicode import BidiUnicodeRule, InvisibleUnicodeRule

__all__ = (
    "CATEGORIES",
    "MAX_NORMALIZED_CHARS",
    "MAX_SCAN_CHARS",
    "PII_RULES",
    "RULES",
    "RULES_VERSION",
    "SECRET_RULES",
    "AccessPlantingRule",
    "AgentDirectiveRule",
    "ApiKeyRule",
    "SEVERITY",
    "BidiUnicodeRule",
    "CardNumberRule",
    "CacheInfo",
    "CommandAndControlRule",
    "ConcealmentRule",
    "ConversationForwardingRule",
    "CredentialExfiltrationRule",
    "Directive",
    "FakeRoleMarkerRule",
    "Finding",
    "HiddenInstructionRule",
    "HighEntropyStringRule",
    "InjectedInstructionRule",
    "InstructionOverrideRule",
    "InvisibleUnicodeRule",
    "JwtRule",
    "MarkupExfiltrationRule",
    "NamedSecretRule",
    "PasswordAssignmentRule",
    "PrivateKeyRule",
    "PromptDisclosureRule",
    "ProviderTokenRule",
    "Redaction",
    "RoleHijackRule",
    "Rule",
    "SecretDisclosureRule",
    "SecretFileAccessRule",
    "UrlCredentialsRule",
    "cache_clear",
    "cache_info",
    "directives",
    "normalize",
    "raw_span",
    "redact_secrets",
    "rules_fingerprint",
    "scan",
    "scan_all",
    "scan_personal",
    "scan_pii",
)

# Bump whenever a rule changes what it finds. Stored with session snapshots
# and part of every cache key; test_scanner pins it to rules_fingerprint(),
# so changing a rule without bumping it fails the build.
RULES_VERSION = "2026.12.30"

# Bigger than any memory file the limits allow, small enough that every rule
# stays well under a second. Longer input is refused whole: scanning only a
# prefix would let a payload hide after the cut.
MAX_SCAN_CHARS: int = 200_000

# NFKC can make text up to 18 times longer (U+FDFA becomes 18 letters), so a
# string under MAX_SCAN_CHARS could still hand the text rules megabytes.
# Real prose grows by a few percent at most; twice the cap is generous.
MAX_NORMALIZED_CHARS: int = 2 * MAX_SCAN_CHARS

# Order decides which rule scan() names when several match: the intent of the
# text (injection, directives, exfiltration) is more useful to a reviewer than
# the fact that it also carries a secret or an odd character.
RULES: tuple[Rule, ...] = (
    FakeRoleMarkerRule(),
    # A persona set-up that also drops the rules is named for the persona:
    # that is what a reviewer recognises.
    RoleHijackRule(),
    InstructionOverrideRule(),
    InjectedInstructionRule(),
    ConcealmentRule(),
    HiddenInstructionRule(),
    AgentDirectiveRule(),
    PromptDisclosureRule(),
    AccessPlantingRule(),
    CommandAndControlRule(),
    CredentialExfiltrationRule(),
    ConversationForwardingRule(),
    MarkupExfiltrationRule(),
    SecretFileAccessRule(),
    PrivateKeyRule(),
    ApiKeyRule(),
    ProviderTokenRule(),
    JwtRule(),
    UrlCredentialsRule(),
    PasswordAssignmentRule(),
    SecretDisclosureRule(),
    NamedSecretRule(),
    CardNumberRule(),
    HighEntropyStringRule(),
    InvisibleUnicodeRule(),
    BidiUnicodeRule(),
)
SECRET_RULES: tuple[SecretRule, ...] = tuple(rule for rule in RULES if isinstance(rule, SecretRule))
PII_RULES: tuple[str, ...] = ("iban", "payment_card", "national_id")
# How bad a finding is, by category: a secret or data sent out is harm done
# once the text is served; steering is harm the agent may resist; hidden
# characters and size hide or stall, and a person can judge them.
SEVERITY: dict[str, str] = {
    "secret": "critical",
    "exfiltration": "critical",
    "prompt_injection": "high",
    "agent_directive": "high",
    "unicode": "medium",
    "size": "medium",
    "pii": "medium",
}
# Rules whose findings are looked for under encodings too. The invisible and
# bidi rules read the raw text, which a decoded text does not have.
_DECODED_RULES = tuple(rule for rule in RULES if rule.category != "unicode")
CATEGORIES: tuple[str, ...] = (
    "prompt_injection",
    "agent_directive",
    "exfiltration",
    "secret",
    "unicode",
    "size",
)


# --- size cap ----------------------------------------------------------------------------------


def _too_large(text: str, normalized: str | None = None) -> Finding | None:
    if len(text) > MAX_SCAN_CHARS:
        return Finding(
            rule="input_too_large",
            category="size",
            detail=(
                f"Text is {len(text):,} characters; the scanner refuses anything over {MAX_SCAN_CHARS:,} "
                "characters rather than scan part of it."
            ),
            start=0,
            end=0,
        )
    if normalized is not None and len(normalized) > MAX_NORMALIZED_CHARS:
        return Finding(
            rule="input_too_large",
            category="size",
            detail=(
                f"Text grows to {len(normalized):,} characters under Unicode normalisation; the scanner refuses "
                f"anything over {MAX_NORMALIZED_CHARS:,}."
            ),
            start=0,
            end=0,
        )
    return None


def _scan_all_uncached(text: str) -> tuple[Finding, ...]:
    too_large = _too_large(text)
    if too_large is not None:
        return (too_large,)
    normalized = normalize(text)
    too_large = _too_large(text, normalized)
    if too_large is not None:
        return (too_large,)
    found: dict[str, Finding] = {}
    for rule in RULES:
        finding = rule.find(text, normalized)
        if finding is not None:
            found[rule.name] = replace(finding, severity=SEVERITY.get(finding.category, "high"))
    if len(found) < len(_DECODED_RULES):
        _scan_decoded(normalized, found)
    return tuple(found[rule.name] for rule in RULES if rule.name in found)


def _scan_decoded(normalized: str, found: dict[str, Finding], depth: int = 0) -> None:
    """Rescan what hides under an encoding (base64, hex, rot13, percent and
    entity encoding, reversed text, shuffled letters); a finding there is reported at the
    encoded span and says how it was decoded. Two levels deep: base64 inside
    base64 is as easy for a model to read as one layer."""
    for candidate in decoding.candidates(normalized):
        inner = normalize(candidate.text)
        if len(inner) > MAX_NORMALIZED_CHARS:
            continue
        for rule in _DECODED_RULES:
            if rule.name in found:
                continue
            finding = rule.find(candidate.text, inner)
            if finding is not None:
                found[rule.name] = replace(
                    finding,
                    detail=f"Decoded from {candidate.how}: {finding.detail}",
                    start=candidate.start,
                    end=candidate.end,
                    severity=SEVERITY.get(finding.category, "high"),
                    decoded=candidate.how,
                )
        if depth == 0:
            nested: dict[str, Finding] = {}
            _scan_decoded(inner, nested, depth + 1)
            for name, finding in nested.items():
                found.setdefault(
                    name, replace(finding, start=candidate.start, end=candidate.end,
                                  decoded=f"{finding.decoded} inside {candidate.how}")
                )  # fmt: skip


# --- the cache ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class CacheInfo:
    hits: int
    misses: int
    size: int
    maxsize: int


class _Memo:
    """A bounded LRU keyed by (namespace, RULES_VERSION, digest of the text).
    Keys hold a 16-byte digest, never the text, so the cache holds no
    memory content beyond the findings' details."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._entries: OrderedDict[tuple[str, str, bytes], tuple[Finding, ...]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(namespace: str, text: str) -> tuple[str, str, bytes]:
        digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        return namespace, RULES_VERSION, digest

    def get(self, key: tuple[str, str, bytes]) -> tuple[Finding, ...] | None:
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return found

    def put(self, key: tuple[str, str, bytes], findings: tuple[Finding, ...]) -> None:
        with self._lock:
            self._entries[key] = findings
            self._entries.move_to_end(key)
            while len(self._entries) > self.maxsize:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.hits = self.misses = 0

    def info(self) -> CacheInfo:
        with self._lock:
            return CacheInfo(self.hits, self.misses, len(self._entries), self.maxsize)


# Enough for every memory file, persona file and recent log entry a process
# serves; a few MB at most (findings are small, keys are digests).
_CACHE = _Memo(maxsize=8192)


def cache_info() -> CacheInfo:
    return _CACHE.info()


def cache_clear() -> None:
    _CACHE.clear()


def _cached(namespace: str, text: str, compute: Callable[[str], tuple[Finding, ...]]) -> tuple[Finding, ...]:
    key = _Memo.key(namespace, text)
    found = _CACHE.get(key)
    if found is None:
        found = compute(text)
        _CACHE.put(key, found)
    return found


# --- entry points ------------------------------------------------------------------------------


def scan(text: str) -> Finding | None:
    """The first finding in RULES order, or None when the text is safe to store."""
    findings = _cached("scan", text, _scan_all_uncached)
    return findings[0] if findings else None


def scan_all(text: str) -> list[Finding]:
    """Every rule's first finding, in RULES order, for reviewers who want the
    whole picture rather than the first reason to refuse."""
    return list(_cached("scan", text, _scan_all_uncached))


def directives(text: str) -> list[Directive]:
    """The structure model's reading of a text, clause by clause: each
    `Directive` says who the clause addresses ("the agent"), what it acts on
    (`target`: instructions, rules, system prompt …), what it does to it
    (`action`: ignore, reveal, "you are now" …), its `kind` ("override",
    "disclosure", "persona set-up", "no-rules persona", "stay in character",
    "answer twice", "no refusals", "jailbreak persona", "mode switch",
    "note to automated readers", "claimed system turn", "fake dialogue
    turn", "hidden from people", "dictated answer", "redirected output",
    "claimed creator" …), its `weight` and its span (offsets in
    normalize(text)). `describe()` gives the sentence a reviewer reads:
    "a directive addressed to the agent ('ignore'), acting on its
    instructions".

    Everything here is a signal, not a verdict: scan() refuses a text when
    an override or a disclosure is found, or when the persona or
    injected-instruction cues add up to three points. Consolidation uses it
    to tell a directive from a fact ("the user prefers email" has none)."""
    if len(text) > MAX_SCAN_CHARS:
        return []
    return list(structure.analyse(normalize(text)).directives)


def scan_pii(text: str) -> list[Finding]:
    """Every IBAN (mod-97 checked), payment card (Luhn-checked) and national
    id (US SSN, UK NINO, Spanish DNI/NIE, French NIR, German tax id) in the
    text, in order, category "pii". Offsets are in normalize(text)."""
    if len(text) > MAX_SCAN_CHARS:
        return []
    return list(
        _cached("pii", text, lambda t: tuple(replace(f, severity=SEVERITY["pii"]) for f in pii.scan_pii_uncached(t)))
    )


def scan_personal(text: str) -> list[Finding]:
    """Every special category of personal data in the text, in order, rule
    one of `pii.SPECIAL_CATEGORY` (iban, payment_card, national_id,
    government_id, health, relative_contact, sensitive_trait). Offsets are
    in normalize(text)."""
    if len(text) > MAX_SCAN_CHARS:
        return []
    return list(_cached("personal", text, lambda t: tuple(pii.scan_personal_uncached(t))))


# --- redaction ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Redaction:
    """`text` with every secret replaced by `[REDACTED:<rule>]`; `count`
    secrets replaced; `rules` the rules that found them, in text order,
    each named once."""

    text: str
    count: int
    rules: tuple[str, ...]


def _normalize_with_origin(text: str) -> tuple[str, list[int] | None]:
    """normalize() character by character, with each output character's
    position in `text` (None when nothing moved)."""
    if normalize(text) == text:
        return text, None
    pieces: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(text):
        if unicodedata.category(char) == "Cf":
            continue
        folded = unicodedata.normalize("NFKC", char)
        pieces.append(folded)
        origin.extend([index] * len(folded))
    origin.append(len(text))
    return "".join(pieces), origin


def raw_span(text: str, finding: Finding | Directive) -> tuple[int, int]:
    """A finding's span as offsets in `text` as stored (the text rules report
    offsets in normalize(text); the invisible/bidi rules raw ones already),
    for showing it highlighted."""
    if getattr(finding, "category", "") == "unicode":
        return finding.start, finding.end
    _normalized, origin = _normalize_with_origin(text)
    if origin is None:
        return finding.start, finding.end
    start = origin[min(finding.start, len(origin) - 1)]
    end = origin[min(max(finding.end - 1, finding.start), len(origin) - 1)] + 1
    return start, min(max(end, start), len(text))


def redact_secrets(text: str) -> Redaction:
    """Replace every secret span with `[REDACTED:<rule>]` and leave every
    other character as it was. Only the secret itself goes: "My password is
    [REDACTED:secret_disclosure]" keeps the sentence readable. Runs until no
    secret is left (a secret can hide another's shape), at most three passes.
    """
    count = 0
    rules: list[str] = []
    for _ in range(3):
        normalized, origin = _normalize_with_origin(text)
        spans = secret_spans(SECRET_RULES, normalized)
        if not spans:
            break
        for start, end, rule in reversed(spans):
            if origin is not None:
                start, end = origin[start], origin[end - 1] + 1
            text = text[:start] + f"[REDACTED:{rule}]" + text[end:]
        count += len(spans)
        for _start, _end, rule in spans:
            if rule not in rules:
                rules.append(rule)
    return Redaction(text=text, count=count, rules=tuple(rules))


# --- the version's fingerprint -----------------------------------------------------------------

_RULE_SOURCES = (
    "base.py",
    "directives.py",
    "exfiltration.py",
    "injection.py",
    "decoding.py",
    "disclosure_cue.py",
    "learned.py",
    "pii.py",
    "secrets.py",
    "structure.py",
    "unicode.py",
)


def rules_fingerprint() -> str:
    """A digest of what decides the findings: the rule modules' code (comments
    and docstrings excluded), the confusables table, the learned cue's
    weights, the detect-secrets and wordllama versions and the order of RULES. test_scanner pins RULES_VERSION to it."""
    digest = hashlib.sha256()
    folder = Path(__file__).with_name("scanning")
    for name in _RULE_SOURCES:
        tree = ast.parse((folder / name).read_text("utf-8"))
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if (
                isinstance(body, list)
                and body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                body[0] = ast.Pass()
        digest.update(ast.dump(tree).encode())
    digest.update((folder / "confusables.json").read_bytes())
    digest.update((folder / "learned.json").read_bytes())
    digest.update((folder / "disclosure_cue.json").read_bytes())
    digest.update(importlib.metadata.version("detect-secrets").encode())
    digest.update(importlib.metadata.version("wordllama").encode())
    digest.update(importlib.metadata.version("onnxruntime").encode())
    digest.update(repr([(rule.name, rule.category) for rule in RULES]).encode())
    return digest.hexdigest()[:16]
