"""The memory scanner: every write to agent memory passes it, and context
assembly runs it again before stored text reaches a model.

Memory is untrusted input. Whatever an agent, an admin or consolidation
writes is later pasted into some agent's prompt, so the scanner refuses text
that tries to steer that agent (prompt injection), to move credentials out
(exfiltration), that *is* a credential (secrets), or that hides characters
from the human who reviews it (invisible and bidi Unicode).

The module is pure Python on purpose: services, context assembly and the
tests call it without Django, and its rules can be read in one sitting.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = (
    "MAX_NORMALIZED_CHARS",
    "MAX_SCAN_CHARS",
    "RULES",
    "RULES_VERSION",
    "ApiKeyRule",
    "BidiUnicodeRule",
    "ConcealmentRule",
    "CredentialExfiltrationRule",
    "FakeRoleMarkerRule",
    "Finding",
    "InstructionOverrideRule",
    "InvisibleUnicodeRule",
    "JwtRule",
    "PasswordAssignmentRule",
    "PrivateKeyRule",
    "RoleHijackRule",
    "Rule",
    "normalize",
    "scan",
    "scan_all",
)

# Bumped whenever a rule changes what it catches: cached scan results,
# cached contexts and frozen session snapshots made under older rules are
# checked again.
RULES_VERSION = "1"

# Bigger than any memory file the limits allow, small enough that every rule
# stays well under a second. Longer input is refused whole: scanning only a
# prefix would let a payload hide after the cut.
MAX_SCAN_CHARS: int = 200_000

# NFKC can make text up to 18 times longer (U+FDFD becomes 18 letters), so a
# string under MAX_SCAN_CHARS could still hand the text rules megabytes.
# Real prose grows by a few percent at most; twice the cap is generous.
MAX_NORMALIZED_CHARS: int = 2 * MAX_SCAN_CHARS


@dataclass(frozen=True)
class Finding:
    rule: str
    category: str
    detail: str
    start: int
    end: int


@runtime_checkable
class Rule(Protocol):
    name: str
    category: str

    def find(self, raw: str, normalized: str) -> Finding | None: ...


# --- normalisation ------------------------------------------------------------------------


def _format_characters() -> dict[int, None]:
    # Every Cf code point sits in the BMP, plane 1 or the tag block of plane
    # 14; walking only those keeps the import cheap instead of touching all
    # 1.1M code points.
    table: dict[int, None] = {}
    for block in (range(0x20000), range(0xE0000, 0xE1000)):
        for code_point in block:
            if unicodedata.category(chr(code_point)) == "Cf":
                table[code_point] = None
    return table


_FORMAT_CHARACTERS = _format_characters()


def normalize(text: str) -> str:
    """NFKC, then drop every format (Cf) character.

    NFKC folds fullwidth and other compatibility look-alikes onto ASCII so
    "ｉｇｎｏｒｅ" reads as "ignore"; dropping format characters closes the
    "ig<ZWSP>nore" gap. Case is left alone: the rules match case-insensitively,
    and casefold would shift offsets ("ß" becomes "ss") for no gain.
    """
    return unicodedata.normalize("NFKC", text).translate(_FORMAT_CHARACTERS)


# --- shared helpers ---------------------------------------------------------------------------


def _compile(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


def _quote(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _redact(secret: str) -> str:
    # Enough for a person to recognise which key it is, never enough to use:
    # at most six characters and never more than a third of the value.
    return secret[: min(6, len(secret) // 3)] + "…"


def _earliest(patterns: tuple[tuple[re.Pattern[str], str], ...], text: str) -> tuple[re.Match[str], str] | None:
    best: tuple[re.Match[str], str] | None = None
    for pattern, label in patterns:
        match = pattern.search(text)
        if match is not None and (best is None or match.start() < best[0].start()):
            best = (match, label)
    return best


class _PatternRule:
    """A rule that is a handful of regexes over the normalised text.

    The earliest match across the patterns wins, so the reported offset does
    not depend on the order the patterns are listed in.
    """

    name: str
    category: str
    patterns: tuple[tuple[re.Pattern[str], str], ...]

    def find(self, raw: str, normalized: str) -> Finding | None:
        found = _earliest(self.patterns, normalized)
        if found is None:
            return None
        match, label = found
        return Finding(
            rule=self.name,
            category=self.category,
            detail=self.describe(match, label),
            start=match.start(),
            end=match.end(),
        )

    def describe(self, match: re.Match[str], label: str) -> str:
        return f'Text tries to {label} ("{_quote(match.group())}").'


# Fillers between keywords are bounded everywhere: an unbounded `.*` between
# two words is how a regex scanner becomes a ReDoS. `_SEP` is the run of
# spaces, punctuation or markdown (`**`, `-`) between two words; `_WORD` is one
# word of slack.
_SEP = r"[\W_]{1,10}"
_WORD = r"\w{1,25}"
_APOSTROPHE = r"['\u2019]"

# --- prompt injection -------------------------------------------------------------------------


class InstructionOverrideRule(_PatternRule):
    """Text that tries to replace whatever the agent was told with what the
    memory says: "ignore previous instructions", "override your rules"."""

    name = "prompt_injection"
    category = "prompt_injection"
    patterns = (
        (
            _compile(
                rf"\b(?:ignore|disregard|forget|discard|override|bypass)"
                rf"(?:{_SEP}(?:all|any|every|each|the|your|my|of|these|those|such)){{0,3}}"
                rf"{_SEP}(?:previous|prior|above|earlier|preceding|foregoing|initial|original|system|developer)"
                rf"(?:{_SEP}(?:and|or){_SEP}{_WORD})?(?:{_SEP}{_WORD}){{0,2}}?"
                rf"{_SEP}(?:instructions?|rules?|prompts?|directives?|guidelines?|guidance|constraints?|orders"
                rf"|programming)\b"
            ),
            "override the agent's instructions",
        ),
        (
            _compile(
                rf"\b(?:ignore|disregard|forget){_SEP}(?:all|everything|anything)"
                rf"(?:{_SEP}(?:of|the|that|this|you|was|were|have|been|written|said|stated|text)){{0,4}}"
                rf"{_SEP}(?:above|told|instructed|taught|so{_SEP}far|until{_SEP}now|up{_SEP}to{_SEP}now)\b"
            ),
            "override the agent's instructions",
        ),
        (
            _compile(
                rf"\b(?:ignore|disregard|forget|override|overwrite|bypass|circumvent|disable|abandon)"
                rf"(?:{_SEP}(?:all|any|of)){{0,2}}{_SEP}your"
                rf"(?:{_SEP}(?:own|current|original|initial|previous|prior|system|safety|core|default|existing"
                rf"|real|given|programmed|built-in|builtin|content)){{0,2}}"
                rf"{_SEP}(?:instructions?|rules|guidelines|programming|directives|restrictions|guardrails"
                rf"|constraints|prompt|filters?|polic(?:y|ies)|training)\b"
            ),
            "override the agent's instructions",
        ),
        (
            # "Deploy the new system prompt on Friday" is a normal note for a
            # team that builds agents, so the bare phrase is not enough: it has
            # to be addressed to the agent or introduce a block of text.
            _compile(rf"\byour{_SEP}new{_SEP}(?:system{_SEP}prompt|instructions|directives|orders)\b"),
            "replace the agent's system prompt",
        ),
        (
            _compile(
                rf"\bnew{_SEP}system{_SEP}(?:prompt|instructions?|message)[ \t*_]{{0,3}}(?::|\]|>|-{{2,}}|={{2,}}|\n)"
            ),
            "replace the agent's system prompt",
        ),
        (
            _compile(
                rf"\b(?:here\s+is|here{_APOSTROPHE}s|this\s+is|below\s+is|begin|start|enter|activate)"
                rf"\s+(?:the\s+|a\s+|your\s+|this\s+)?new{_SEP}system{_SEP}prompt\b"
            ),
            "replace the agent's system prompt",
        ),
    )


# The identities a hijack hands the agent. Ordinary role changes ("you are
# now the on-call engineer") must pass, so only AI personas and the
# well-known jailbreak states count.
_PERSONA = (
    rf"(?:(?:a|an|the|my|called|named|known\s+as)\b(?:{_SEP}{_WORD}){{0,4}}?{_SEP}"
    rf"(?:ai|assistant|model|bot|chatbot|persona|character|llm|gpt|chatgpt)\b"
    rf"|dan\b|jailbroken\b|unrestricted\b|unfiltered\b|uncensored\b|unbound\b|free\s+(?:from|of)\b"
    rf"|no\s+longer\s+(?:bound|restricted|limited|an?\s+(?:ai|assistant|model))\b"
    rf"|in\s+(?:developer|dev|god|admin|jailbreak|unrestricted|dan)\s+mode\b)"
)


class RoleHijackRule(_PatternRule):
    """Text that tells the agent it is now someone else."""

    name = "role_hijack"
    category = "prompt_injection"
    patterns = (
        (_compile(rf"\byou\s+are\s+now\s+{_PERSONA}"), "give the agent a new identity"),
        (
            _compile(
                rf"\bfrom\s+now\s+on\W{{1,5}}you(?:\s+are|{_APOSTROPHE}re|\s+will\s+be|{_APOSTROPHE}ll\s+be"
                rf"|\s+shall\s+be)\s+{_PERSONA}"
            ),
            "give the agent a new identity",
        ),
        (
            _compile(
                r"\bfrom\s+now\s+on\W{1,5}(?:you\s+(?:will\s+)?)?(?:act|behave|respond|roleplay|role-play)\s+as\b"
            ),
            "give the agent a new identity",
        ),
        (
            _compile(
                rf"\b(?:act|behave|respond|roleplay|role-play|pose)\s+as\b(?:{_SEP}{_WORD}){{0,6}}?{_SEP}"
                rf"(?:dan|jailbroken|jailbreak|unrestricted|unfiltered|uncensored"
                rf"|(?:without|no){_SEP}(?:any{_SEP})?(?:restrictions|limits|limitations|filters|rules|guidelines))\b"
            ),
            "switch the agent into an unrestricted mode",
        ),
        (
            _compile(
                rf"\bpretend\s+(?:that\s+)?(?:you\s+are|you{_APOSTROPHE}re|to\s+be)\s+(?:the\s+|a\s+|an\s+)?"
                rf"(?:system|developer|admin|administrator|root|operator|openai|anthropic|dan\b|jailbroken"
                rf"|unrestricted|(?:unrestricted|unfiltered|jailbroken|different|another)\s+(?:ai|assistant|model))"
            ),
            "give the agent a new identity",
        ),
        (
            # "Enable developer mode" is an Android setting, so only the
            # jailbreak names count here.
            _compile(
                r"\b(?:enable|enter|activate|switch\s+to)\s+(?:the\s+)?(?:dan|jailbreak|god|unrestricted)\s+mode\b"
            ),
            "switch the agent into an unrestricted mode",
        ),
    )


_NOBODY = r"(?:the\s+)?(?:user|human|operator|owner|reviewer)s?"


class ConcealmentRule(_PatternRule):
    """Text that asks the agent to keep something from the person it serves,
    the tell-tale of an instruction that would not survive being seen."""

    name = "concealment"
    category = "prompt_injection"
    patterns = (
        (
            # "Don't tell the user to restart" is advice about wording, not
            # secrecy, hence the `to` exclusion.
            _compile(
                rf"\b(?:do\s+not|don{_APOSTROPHE}?t|never|must\s+not|mustn{_APOSTROPHE}?t|should\s+not"
                rf"|shouldn{_APOSTROPHE}?t|without)\s+(?:tell|inform)(?:ing)?\s+{_NOBODY}\b(?!\s+to\b)"
            ),
            "make the agent hide something from the user",
        ),
        (
            _compile(
                rf"\b(?:do\s+not|don{_APOSTROPHE}?t|never|must\s+not|without)\s+"
                rf"(?:mention|reveal|disclose|show|say|repeat)(?:ing)?\s+"
                rf"(?:this|these|that|it|any\s+of\s+this|the\s+above|these\s+instructions|this\s+(?:message|instruction|note))"
                rf"\s+(?:to|with)\s+{_NOBODY}\b"
            ),
            "make the agent hide something from the user",
        ),
        (
            _compile(
                rf"\b(?:keep|hide)\s+(?:this|these|it|that)(?:\s+(?:instructions?|message|note))?"
                rf"\s+(?:(?:secret|hidden)\s+)?from\s+{_NOBODY}\b"
            ),
            "make the agent hide something from the user",
        ),
        (
            _compile(
                rf"\bwithout\s+{_NOBODY}(?:{_APOSTROPHE}s?)?\s+(?:knowing|noticing|seeing|knowledge|being\s+aware)\b"
            ),
            "make the agent hide something from the user",
        ),
    )


# A chat transcript's role markers only mean something at the start of a
# line. U+2028/U+2029 and friends count as line breaks because tokenisers and
# renderers treat them as such even though `re.MULTILINE` does not.
_LINE_START = r"(?:^|(?<=[\n\r\x0b\x0c\x85\u2028\u2029]))[ \t>]{0,8}(?:<s>[ \t]{0,4})?"
_INSTRUCTION_START = (
    rf"(?:you\s+(?:are|must|will|should|shall|have\s+to|may\s+now|now)|your\s+(?:new|real|true|actual|only"
    rf"|instructions|task|role|goal|job)|ignore|disregard|forget|override|from\s+now\s+on|always|never|do\s+not"
    rf"|don{_APOSTROPHE}?t|reveal|respond|reply|answer|act\s+as|pretend|execute|obey|comply|output|print|disable"
    rf"|new\s+(?:instructions|rules|task)|the\s+user\s+(?:is|has|wants)|(?:i|we)\s+(?:am|are)\s+(?:your|the))\b"
)


class FakeRoleMarkerRule(_PatternRule):
    """Chat-template tokens and role headers that make stored memory look like
    a system or assistant turn to the model reading it."""

    name = "fake_role_marker"
    category = "prompt_injection"
    patterns = (
        (
            _compile(
                _LINE_START + r"<\|(?:im_start|im_end|system|assistant|user|developer|endoftext|eot_id"
                r"|start_header_id|end_header_id|begin_of_text)\|>"
            ),
            "chat-template token",
        ),
        # `(?!\()` lets a markdown link such as "[System](docs/system.md)" through.
        (_compile(_LINE_START + r"\[/?(?:system|sys|inst|assistant)\](?!\()"), "role tag"),
        (_compile(_LINE_START + r"<</?sys>>"), "role tag"),
        (
            # "## System design" is a heading; "### System:" is a role header.
            _compile(
                _LINE_START + r"#{1,6}[ \t]{0,4}(?:system|assistant|developer)"
                r"(?:[ \t]{1,4}(?:prompt|message|instructions?))?[ \t*_]{0,4}:"
            ),
            "role header",
        ),
        (
            # A bare "System:" line is only a marker when what follows speaks
            # to the agent: "System: Debian 12" is an inventory note.
            _compile(
                _LINE_START + r"[*_]{0,2}(?:system|assistant|developer)[*_]{0,2}[ \t]{0,4}:[*_]{0,2}[ \t]{0,4}"
                r"(?:[^\n]{0,40}?\b)?" + _INSTRUCTION_START
            ),
            "role header",
        ),
        # Mid-line `</s>` is usually HTML strikethrough; at a line start, or
        # right before another marker, it is an end-of-turn token.
        (_compile(_LINE_START + r"</s>"), "end-of-turn token"),
        (_compile(r"</s>[ \t]{0,4}(?:<s>|\[inst\]|<\|)"), "end-of-turn token"),
    )

    def describe(self, match: re.Match[str], label: str) -> str:
        return (
            f'Text contains a fake {label} ("{_quote(match.group())}"); '
            "memory must not pose as a system or assistant turn in the agent's prompt."
        )


# --- credential exfiltration ------------------------------------------------------------------

# Where data could be sent. Bare domains are limited to common TLDs because
# "deploy.sh" or "os.path" must not read as a host.
_DESTINATION = _compile(
    r"\b(?:https?|ftps?|sftp|wss?)://[^\s\"'<>()\[\]{}`|]{1,300}"
    r"|(?<![\w.+-])[\w.+-]{1,64}@[a-z0-9-]{1,63}(?:\.[a-z0-9-]{1,63}){1,8}"
    r"|(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?!\.?\d)"
    r"|(?<![\w.-])(?:[a-z0-9-]{1,63}\.){1,8}(?:com|net|org|io|xyz|ru|cn|tk|top|site|online|info|biz|cc|su|pw)\b"
    r"|\b(?:webhook|pastebin|requestbin|ngrok|interactsh|burpcollaborator)\b"
)
_URL_HOST = re.compile(r"://(?:[^/\s?#@]{0,200}@)?([^/\s?#:]{1,253})")

# Things that hold credentials by reference: variable names, files, commands.
# These count even inside a URL ("?k=$OPENAI_API_KEY" is the classic leak).
_SECRET_REFERENCE = _compile(
    r"(?<![\w.])\.env\b|~/\.ssh\b|\.ssh/|\bid_(?:rsa|dsa|ecdsa|ed25519)\b|/etc/(?:passwd|shadow|sudoers)\b"
    r"|\.aws/credentials\b|\.netrc\b|\.npmrc\b|\.pypirc\b|\.git-credentials\b|\bkubeconfig\b|\.kube/config\b"
    r"|\bprintenv\b|(?<![\w.-])env(?=[ \t]{0,4}\|)|\bos\.environ\b|\bprocess\.env\b"
    r"|\benviron(?:ment)?[ \t]+variables?\b|\benv[ \t]+vars?\b"
    r"|\$\{?[a-z0-9_]{0,60}?(?:key|token|secret|password|passwd|pass|pwd|credentials?|auth)[a-z0-9_]{0,20}\}?"
)
# Credentials named in words. Inside a URL these are path segments
# (".../oauth/token"), and followed by a word like "reset" or "budget" they
# name a concept, not a value, so both are skipped.
_SECRET_WORD = _compile(
    r"\b(?:secrets?|api[\s_-]?keys?|access[\s_-]?keys?|secret[\s_-]?keys?|private[\s_-]?keys?|ssh[\s_-]?keys?"
    r"|tokens?|passwords?|passwd|passphrases?|credentials?|creds|cookies?|session[\s_-]?ids?)\b"
    r"(?![ \t_-]{1,3}(?:reset|policy|policies|manager|rotation|expiry|expiration|strength|requirements?|rules?"
    r"|field|prompt|hash(?:ing)?|length|budget|limits?|count|usage|endpoint|page|form|flow|screen|dialog)\b)"
)
# Tools and calls that move data always count; everyday verbs ("post",
# "share", "email") only when what follows looks like an object of sending,
# so "the post at https://…" or "email support" stay prose.
_SEND_VERB = _compile(
    r"\b(?:curl|wget|nc|ncat|netcat|scp|rsync|sftp|exfiltrat(?:e|es|ed|ing)|exfil|upload(?:s|ed|ing)?"
    r"|transmit(?:s|ted|ting)?|beacon|invoke-webrequest|invoke-restmethod|iwr|irm)\b"
    r"|\b(?:requests|httpx|axios|http|urllib\.request)\.(?:post|put|get|request|urlopen)\b"
    r"|\bfetch\s{0,3}\("
    r"|\b(?:send|post|e-?mail|mail|forward|leak|share|paste|submit|report|dump|copy|push|transfer|fetch|pipe)"
    r"(?:s|es|ed|ing)?[ \t]{1,4}(?=(?:the|all|any|every|your|my|our|their|its|this|these|those|them|it|a|an|me|us"
    r"|over|out|back|along|off|to|secret|api|access|private|ssh|token|password|passwd|cred|cookie|session|env)\b"
    r"|[\w.+-]{1,64}@|(?:https?|ftp)://|[$~./\"'`@-])"
)
# A clause ends at a line break (unless continued with a backslash, as in
# shell) or at sentence punctuation followed by space. Verb, destination and
# secret must share a clause, so "curl https://…/health; API keys rotate
# monthly" is two clauses and passes.
_CLAUSE_BREAK = re.compile(r"(?<!\\)\n|[.!?;](?=\s)")
# Verb, destination and secret must also sit within this many characters of
# each other, so one endless minified line cannot pair words kilobytes apart.
_EXFIL_WINDOW = 300


def _inbound(text: str, start: int) -> bool:
    # "fetch the token from https://auth.example.com" reads data in, it does
    # not send it out.
    return text[max(0, start - 8) : start].rstrip().lower().endswith("from")


def _host(destination: str) -> str:
    match = _URL_HOST.search(destination)
    return match.group(1) if match else destination


class CredentialExfiltrationRule:
    """A sending verb, an outside destination and a credential in one clause:
    "send the API key to https://…", "cat ~/.ssh/id_rsa | curl …".

    Three independent linear searches plus bisection keep this O(n) however
    many verbs, URLs or secret words the text repeats.
    """

    name = "credential_exfiltration"
    category = "exfiltration"

    def find(self, raw: str, normalized: str) -> Finding | None:
        destinations = [m for m in _DESTINATION.finditer(normalized) if not _inbound(normalized, m.start())]
        if not destinations:
            return None
        destination_starts = [m.start() for m in destinations]
        secrets = list(_SECRET_REFERENCE.finditer(normalized))
        secrets += [m for m in _SECRET_WORD.finditer(normalized) if not _inside(destinations, destination_starts, m)]
        if not secrets:
            return None
        secrets.sort(key=lambda m: m.start())
        secret_starts = [m.start() for m in secrets]
        breaks = [m.start() for m in _CLAUSE_BREAK.finditer(normalized)]
        for verb in _SEND_VERB.finditer(normalized):
            clause = bisect.bisect_right(breaks, verb.start())
            destination = _near(destinations, destination_starts, verb.start(), clause, breaks)
            secret = _near(secrets, secret_starts, verb.start(), clause, breaks)
            if destination is None or secret is None:
                continue
            return Finding(
                rule=self.name,
                category=self.category,
                detail=(
                    f'Text asks to send credentials ("{_quote(secret.group(), 40)}") to an outside destination '
                    f'({_quote(_host(destination.group()), 60)}) with "{_quote(verb.group().strip(), 30)}".'
                ),
                start=min(verb.start(), destination.start(), secret.start()),
                end=max(verb.end(), destination.end(), secret.end()),
            )
        return None


def _inside(spans: list[re.Match[str]], starts: list[int], match: re.Match[str]) -> bool:
    index = bisect.bisect_right(starts, match.start()) - 1
    return index >= 0 and spans[index].end() >= match.end()


def _near(
    matches: list[re.Match[str]], starts: list[int], position: int, clause: int, breaks: list[int]
) -> re.Match[str] | None:
    # Intersect the window with the clause first so one bisection answers,
    # however many candidates crowd the neighbouring clauses.
    low = max(position - _EXFIL_WINDOW, breaks[clause - 1] if clause > 0 else 0)
    high = min(position + _EXFIL_WINDOW + 1, breaks[clause] if clause < len(breaks) else position + _EXFIL_WINDOW + 1)
    index = bisect.bisect_left(starts, low)
    return matches[index] if index < len(starts) and starts[index] < high else None


# --- secrets ----------------------------------------------------------------------------------
#
# Vendor key formats are compiled case-sensitively, the one exception to
# "case-insensitive everywhere": the prefixes are exact ("AKIA", "sk-",
# "ghp_"), and ignoring case would turn every 20-letter word starting with
# "akia" into an AWS key. NFKC still folds fullwidth look-alikes onto them.


class ApiKeyRule(_PatternRule):
    """API keys and tokens whose vendor prefix makes them recognisable."""

    name = "secret_api_key"
    category = "secret"
    patterns = (
        (re.compile(r"(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{20,}"), "an Anthropic API key"),
        (re.compile(r"(?<![A-Za-z0-9_-])sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}"), "an OpenAI API key"),
        # Legacy OpenAI keys carry no hyphen after "sk-", which keeps
        # "sk-learn-compatible" out.
        (re.compile(r"(?<![A-Za-z0-9_-])sk-[A-Za-z0-9]{20,}"), "an OpenAI API key"),
        (re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Z0-9])"), "an AWS access key id"),
        (re.compile(r"(?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{36,}"), "a GitHub token"),
        (re.compile(r"(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{22,}"), "a GitHub token"),
        (re.compile(r"(?<![A-Za-z0-9-])xox[baprs]-[0-9]{6,20}-[A-Za-z0-9-]{8,}"), "a Slack token"),
        # Test-mode keys are still secret keys: they read and write an
        # account's test data.
        (re.compile(r"(?<![A-Za-z0-9_])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"), "a Stripe secret key"),
        (re.compile(r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"), "a Google API key"),
    )

    def describe(self, match: re.Match[str], label: str) -> str:
        return f"Text contains what looks like {label} ({_redact(match.group())}); store a reference, not the key."


class PrivateKeyRule(_PatternRule):
    """PEM and PuTTY private keys. The header alone is refused: a truncated
    key in memory is still a key someone meant to paste."""

    name = "secret_private_key"
    category = "secret"
    patterns = (
        (
            _compile(r"-----BEGIN[ ]{1,2}(?:[A-Z0-9]{1,20}[ ]){0,3}PRIVATE[ ]KEY(?:[ ]BLOCK)?-----"),
            "a private key block",
        ),
        (_compile(r"\bPuTTY-User-Key-File-\d{1,2}:"), "a PuTTY private key"),
    )

    def describe(self, match: re.Match[str], label: str) -> str:
        # The PEM header names the key type and holds no key material.
        return f'Text contains {label} ("{_quote(match.group(), 50)}"); private keys never belong in memory.'


class JwtRule(_PatternRule):
    """JSON Web Tokens: the header is base64url JSON, so it starts "eyJ"."""

    name = "secret_jwt"
    category = "secret"
    patterns = (
        (
            re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{7,}\.[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]{10,}"),
            "a JSON Web Token",
        ),
    )

    def describe(self, match: re.Match[str], label: str) -> str:
        return f"Text contains what looks like {label} ({_redact(match.group())}); tokens never belong in memory."


_ASSIGNMENT = _compile(
    r"(?<![A-Za-z0-9])(?P<key>(?:[A-Za-z0-9]{1,30}[_.-]){0,4}"
    r"(?:password|passwd|passphrase|secret|token|bearer|api[_-]?key|apikey|access[_-]?key|secret[_-]?key"
    r"|private[_-]?key|client[_-]?secret|auth[_-]?token|access[_-]?token|refresh[_-]?token)"
    # "pwd" and "pass" alone are a shell command and a verb; DB_PWD is not.
    r"|(?:[A-Za-z0-9]{1,30}[_-]){1,4}(?:pwd|pass))"
    r"[*_\"']{0,3}[ \t]{0,4}(?::=|=>|==?|:)[*_]{0,3}[ \t]{0,4}"
    r"(?:\"(?P<dq>[^\"\n]{1,200})\"|'(?P<sq>[^'\n]{1,200})'|`(?P<bq>[^`\n]{1,200})`|(?P<bare>[^\s\"'`,;]{1,200}))"
)
# Values that stand for a secret without being one.
_PLACEHOLDER = _compile(
    r"[<\[({].*[>\])}]|[*x•.#_-]+|\$\{?\w+\}?|\$\(.*|%\(?\w+\)?s?"
    r"|redacted|hidden|removed|omitted|masked|censored|placeholder|none|null|nil|undefined|empty|unset"
    r"|true|false|yes|no|required|optional|changeme|change[_-]?me|replace[_-]?me|example|sample|dummy|string"
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


class PasswordAssignmentRule:
    """A credential-looking name assigned a literal: `password = hunter2`,
    `"api_key": "…"`, `DB_PASSWORD=…`.

    Deciding whether the value is real needs a few checks a regex cannot
    express readably, so candidates are filtered in Python.
    """

    name = "secret_password_assignment"
    category = "secret"

    def find(self, raw: str, normalized: str) -> Finding | None:
        for match in _ASSIGNMENT.finditer(normalized):
            value_group = next(g for g in ("dq", "sq", "bq", "bare") if match.group(g) is not None)
            value = match.group(value_group)
            if not _looks_like_a_secret(
                value, quoted=value_group != "bare", rest=normalized[match.end() : match.end() + 3]
            ):
                continue
            return Finding(
                rule=self.name,
                category=self.category,
                detail=(
                    f'Text assigns a literal value to "{_quote(match.group("key"), 40)}" ({_redact(value.strip())}); '
                    "credentials never belong in memory."
                ),
                start=match.start(),
                end=match.end(),
            )
        return None


def _looks_like_a_secret(value: str, *, quoted: bool, rest: str) -> bool:
    stripped = value.strip()
    if len("".join(stripped.split())) < _MIN_SECRET_CHARS:
        return False
    if _PLACEHOLDER.fullmatch(stripped) or _URL_VALUE.fullmatch(stripped):
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


# --- unicode ----------------------------------------------------------------------------------
#
# These rules read the raw text: NFKC and normalize() delete most of these
# characters, and the point is to refuse text whose rendering differs from its
# content before a reviewer ever sees it.

_INVISIBLE = re.compile(r"[\u00ad\u180e\u200b-\u200d\u2060-\u2064\u206a-\u206f\ufeff\U000e0000-\U000e007f]")
# U+061C ARABIC LETTER MARK behaves like U+200F and is just as invisible;
# natural Arabic and Hebrew text never needs either.
_BIDI = re.compile(r"[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_ZWJ = "\u200d"
_VARIATION_SELECTOR_16 = "\ufe0f"
# England, Scotland and Wales are the only recommended flag tag sequences:
# allowing exactly these keeps real emoji working while tag characters stay
# useless for smuggling text ("ASCII smuggling").
_TAG_FLAG = re.compile(r"\U0001f3f4([\U000e0061-\U000e007a]{5})\U000e007f")
_ALLOWED_TAG_FLAGS = frozenset({"gbeng", "gbsct", "gbwls"})


def _is_pictograph(char: str) -> bool:
    # unicodedata has no Emoji property; So (other symbol) plus the skin tone
    # modifiers (Sk) covers every emoji that takes part in a ZWJ sequence.
    return unicodedata.category(char) == "So" or "\U0001f3fb" <= char <= "\U0001f3ff"


def _joins_emoji(raw: str, position: int) -> bool:
    # ZWJ sequences (family, profession, rainbow flag emoji) need U+200D
    # between two pictographs; between letters it only hides text or splits
    # a keyword, so only the emoji case is allowed.
    before = position - 1
    if before >= 1 and raw[before] == _VARIATION_SELECTOR_16:
        before -= 1
    return before >= 0 and position + 1 < len(raw) and _is_pictograph(raw[before]) and _is_pictograph(raw[position + 1])


def _allowed_tag_positions(raw: str) -> set[int]:
    allowed: set[int] = set()
    for match in _TAG_FLAG.finditer(raw):
        if "".join(chr(ord(tag) - 0xE0000) for tag in match.group(1)) in _ALLOWED_TAG_FLAGS:
            allowed.update(range(match.start(1), match.end()))
    return allowed


def _code_point_detail(kind: str, char: str, position: int, why: str) -> str:
    return f"Text contains {kind}: U+{ord(char):04X} {unicodedata.name(char, 'UNNAMED')} at position {position}; {why}."


class InvisibleUnicodeRule:
    """Zero-width, word-joiner, soft-hyphen and tag characters."""

    name = "invisible_unicode"
    category = "unicode"

    def find(self, raw: str, normalized: str) -> Finding | None:
        allowed_tags: set[int] | None = None
        for match in _INVISIBLE.finditer(raw):
            position = match.start()
            char = match.group()
            if char == _ZWJ and _joins_emoji(raw, position):
                continue
            if "\U000e0000" <= char <= "\U000e007f":
                if allowed_tags is None:
                    allowed_tags = _allowed_tag_positions(raw)
                if position in allowed_tags:
                    continue
            return Finding(
                rule=self.name,
                category=self.category,
                detail=_code_point_detail(
                    "an invisible character", char, position, "it can hide text from the person reviewing it"
                ),
                start=position,
                end=position + 1,
            )
        return None


class BidiUnicodeRule:
    """Bidirectional controls, which reorder how text is displayed (the
    "Trojan Source" trick) without changing what a model reads."""

    name = "bidi_unicode"
    category = "unicode"

    def find(self, raw: str, normalized: str) -> Finding | None:
        match = _BIDI.search(raw)
        if match is None:
            return None
        return Finding(
            rule=self.name,
            category=self.category,
            detail=_code_point_detail(
                "a bidirectional control character",
                match.group(),
                match.start(),
                "it makes the text display differently from what it says",
            ),
            start=match.start(),
            end=match.end(),
        )


# --- entry points -----------------------------------------------------------------------------

# Order decides which rule scan() names when several match: the intent of the
# text (injection, exfiltration) is more useful to a reviewer than the fact
# that it also carries a secret or an odd character.
RULES: tuple[Rule, ...] = (
    FakeRoleMarkerRule(),
    InstructionOverrideRule(),
    RoleHijackRule(),
    ConcealmentRule(),
    CredentialExfiltrationRule(),
    PrivateKeyRule(),
    ApiKeyRule(),
    JwtRule(),
    PasswordAssignmentRule(),
    InvisibleUnicodeRule(),
    BidiUnicodeRule(),
)


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


def _prepare(text: str) -> tuple[str | None, Finding | None]:
    too_large = _too_large(text)
    if too_large is not None:
        return None, too_large
    normalized = normalize(text)
    return normalized, _too_large(text, normalized)


def scan(text: str) -> Finding | None:
    """The first finding in RULES order, or None when the text is safe to store."""
    normalized, too_large = _prepare(text)
    if too_large is not None or normalized is None:
        return too_large
    for rule in RULES:
        finding = rule.find(text, normalized)
        if finding is not None:
            return finding
    return None


def scan_all(text: str) -> list[Finding]:
    """Every rule's first finding, in RULES order, for reviewers who want the
    whole picture rather than the first reason to refuse."""
    normalized, too_large = _prepare(text)
    if too_large is not None or normalized is None:
        return [too_large] if too_large is not None else []
    findings = (rule.find(text, normalized) for rule in RULES)
    return [finding for finding in findings if finding is not None]
