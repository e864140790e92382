"""The labelled corpus in tests/scanner_corpus/: catch rate per class and
false-positive rate, for unsafe content (scan) and for PII (scan_pii).

Run with `-s` to print the figures docs/scanner.md quotes:

    .venv/bin/pytest tests/memoryhub/test_scanner_corpus.py -q -s
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import yaml

from memoryhub.scanner import SECRET_RULES, normalize, redact_secrets, scan, scan_pii

CORPUS = Path(__file__).resolve().parent.parent / "scanner_corpus"

# Key-shaped values are assembled here, at runtime, so no file in the
# repository holds anything a secret scanner would (rightly) refuse to push.
_AWS = "AKIA" + "IOSFODNN7EXAMPLE"
_STRIPE = "sk_" + "live_" + "51H8xYzAbCdEfGhIjKlMnOpQr"
_GITHUB = "ghp_" + "R2d2C3p0" * 4 + "Bb8K"
SECRETS = {
    "OPENAI_KEY": "sk-" + "proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" + "Q7rT0uV3",
    "ANTHROPIC_KEY": "sk-" + "ant-api03-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe_d-Cb",
    "AWS_KEY": _AWS,
    "AWS_KEY_SPACED": " ".join(_AWS[i : i + 4] for i in range(0, 20, 4)),
    "AWS_SECRET": "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY1234",
    "GITHUB_TOKEN": _GITHUB,
    "GITHUB_TOKEN_DASH": _GITHUB.replace("_", "-"),
    "SLACK_TOKEN": "xoxb-" + "123456789012-1234567890123-" + "AbCdEfGhIjKlMnOpQrStUvWx",
    "STRIPE_KEY": _STRIPE,
    "STRIPE_KEY_SPACED": _STRIPE.replace("_", " "),
    "GOOGLE_KEY": "AIza" + "SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
    "JWT": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    + ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkphbmUifQ"
    + ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "PEM_RSA": "-----BEGIN " + "RSA PRIVATE KEY-----",
    "PEM_OPENSSH": "-----BEGIN " + "OPENSSH PRIVATE KEY-----",
    "GITLAB_TOKEN": "glpat-" + "Xy7Zk2Lm9Qw4Rt1Vb8Nc",
    "SENDGRID_KEY": "SG." + "aB3dE5fG7hJ9kL1mN3pQ5r" + "." + "sT7uV9wX1yZ3aB5cD7eF9gH1jK3lM5nP7qR9sT1uV3w",
    "TWILIO_KEY": "SK" + "0123456789abcdef0123456789abcdef",
    "NPM_TOKEN": "npm_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "HF_TOKEN": "hf_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z",
}
_PLACEHOLDER = re.compile(r"@@([A-Z][A-Z0-9_]+)@@")


@dataclass(frozen=True)
class Case:
    text: str
    label: str
    kind: str
    lang: str


def load(name: str) -> list[Case]:
    cases = []
    for entry in yaml.safe_load((CORPUS / name).read_text("utf-8")):
        text = _PLACEHOLDER.sub(lambda m: SECRETS.get(m.group(1), m.group(0)), entry["text"])
        cases.append(Case(text=text, label=entry["label"], kind=entry["class"], lang=entry["lang"]))
    return cases


# The tuning corpus, then two held-out sets written later (see their
# headers): all of them count.
FILES = ("unsafe.yaml", "benign.yaml", "holdout.yaml", "holdout2.yaml")
CASES = {name: load(name) for name in FILES}
UNSAFE = [case for cases in CASES.values() for case in cases if case.label == "unsafe"]
BENIGN = [case for cases in CASES.values() for case in cases if case.label == "benign"]
PII = load("pii.yaml")

# The targets from issue 10.
MIN_CATCH_RATE = 0.98
MAX_FALSE_POSITIVE_RATE = 0.02
# No class may hide behind the others' average.
MIN_CLASS_CATCH_RATE = 0.90


def _rate(hits: int, total: int) -> str:
    return f"{hits}/{total} = {100 * hits / total:.1f}%"


def test_the_corpus_is_big_enough_and_well_formed() -> None:
    assert len(UNSAFE) + len(BENIGN) >= 400
    assert {c.label for c in UNSAFE} == {"unsafe"} and {c.label for c in BENIGN} == {"benign"}
    assert {c.lang for c in UNSAFE} == {"en", "de", "es", "fr", "zh"}
    assert not [c.text for c in UNSAFE + BENIGN + PII if _PLACEHOLDER.search(c.text)]
    texts = [c.text for c in UNSAFE + BENIGN]
    assert len(texts) == len(set(texts)), "duplicate cases"


def test_it_catches_unsafe_cases_by_class_and_lets_benign_cases_through() -> None:
    caught: dict[str, int] = Counter()
    totals: dict[str, int] = Counter()
    by_lang: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    missed = []
    for case in UNSAFE:
        totals[case.kind] += 1
        by_lang[case.lang][1] += 1
        if scan(case.text) is not None:
            caught[case.kind] += 1
            by_lang[case.lang][0] += 1
        else:
            missed.append(f"{case.kind}/{case.lang}: {case.text!r}")
    flagged = []
    benign_by_class: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for case in BENIGN:
        finding = scan(case.text)
        benign_by_class[case.kind][1] += 1
        if finding is not None:
            benign_by_class[case.kind][0] += 1
            flagged.append(f"{case.kind}/{case.lang}: {case.text!r} -> {finding.rule}")

    print("\nunsafe cases caught, by class:")
    for kind in sorted(totals):
        print(f"  {kind:24} {_rate(caught[kind], totals[kind])}")
    print("unsafe cases caught, by language:")
    for lang in sorted(by_lang):
        print(f"  {lang:24} {_rate(*by_lang[lang])}")
    print(f"unsafe caught overall      {_rate(sum(caught.values()), len(UNSAFE))}")
    print("benign cases flagged, by class:")
    for kind in sorted(benign_by_class):
        print(f"  {kind:24} {_rate(*benign_by_class[kind])}")
    print(f"benign flagged overall     {_rate(len(flagged), len(BENIGN))}")
    print("by file:")
    for name, cases in CASES.items():
        unsafe = [c for c in cases if c.label == "unsafe"]
        benign = [c for c in cases if c.label == "benign"]
        caught_here = sum(scan(c.text) is not None for c in unsafe)
        flagged_here = sum(scan(c.text) is not None for c in benign)
        print(
            f"  {name:24} unsafe caught {caught_here}/{len(unsafe)}, benign flagged {flagged_here}/{len(benign)}"
        )
    for line in missed:
        print(f"  missed   {line}")
    for line in flagged:
        print(f"  flagged  {line}")

    assert sum(caught.values()) / len(UNSAFE) >= MIN_CATCH_RATE, missed
    for kind, total in totals.items():
        assert caught[kind] / total >= MIN_CLASS_CATCH_RATE, (kind, missed)
    assert len(flagged) / len(BENIGN) <= MAX_FALSE_POSITIVE_RATE, flagged


def _secret_findings(text: str) -> list[str]:
    normalized = normalize(text)
    return [f.rule for f in (rule.find(text, normalized) for rule in SECRET_RULES) if f is not None]


def test_every_secret_the_corpus_holds_is_redacted_away() -> None:
    secrets = [c for c in UNSAFE if _secret_findings(c.text)]
    assert len(secrets) >= 80
    for case in secrets:
        redacted = redact_secrets(case.text)
        assert redacted.count >= 1, case.text
        assert _secret_findings(redacted.text) == [], (case.text, redacted.text)


def test_it_finds_pii_by_rule_and_leaves_look_alikes_alone() -> None:
    found: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    wrong = []
    false_positives = 0
    benign = [c for c in PII if c.label == "benign"]
    for case in PII:
        rules = {f.rule for f in scan_pii(case.text)}
        if case.label == "pii":
            found[case.kind][1] += 1
            if case.kind in rules:
                found[case.kind][0] += 1
            else:
                wrong.append(f"missed {case.kind}: {case.text!r}")
        elif rules:
            false_positives += 1
            wrong.append(f"flagged {sorted(rules)}: {case.text!r}")

    print("\nPII found, by rule:")
    for kind in sorted(found):
        print(f"  {kind:24} {_rate(*found[kind])}")
    print(f"PII look-alikes flagged    {_rate(false_positives, len(benign))}")
    for line in wrong:
        print(f"  {line}")

    assert len(PII) >= 60
    for kind, (hits, total) in found.items():
        assert hits / total >= MIN_CATCH_RATE, (kind, wrong)
    assert false_positives / len(benign) <= MAX_FALSE_POSITIVE_RATE, wrong
