"""One classifier for every candidate entry, whichever backend proposed it.

Both backends pass each entry they want to write through `classify` before
it can reach a proposal: the heuristic its candidates (with the sentence
they came from), the llm backend the text of every add, update, merge and
supersede a model answers. The verdict is one of:

- `fact` and `preference`: promoted (a preference is how the person wants
  things done; a fact is anything else worth keeping);
- `directive`: an instruction aimed at the agent that changes what it may
  do or how it treats the user (standing approvals, self-granted discounts
  or exemptions, priority over other customers, disclosure of the system
  prompt). Never promoted: the reviewer sees it as a refused finding;
- `personal`: a special category of personal data (health, an official
  id, a payment card or bank account, a relative's contact data, a
  protected trait). Not promoted unless the workspace's PII policy is
  `allow`; then promoted redacted to what the agent needs (numbers masked
  to their last digits), and the proposal carries the category so it is
  never approved without an acknowledgement;
- `secret`: a credential. Never promoted, never shown;
- `chit_chat`: a question, a greeting, thanks, a one-word line. Dropped.

It builds on the scanner's public API (`memoryhub.scanner.scan` for
injection, directives and secrets; `scan_personal` for the special
categories), so every rule the scanner gains tightens consolidation too,
and adds the clause-level reading of `consolidation.clauses` where the
scanner has none yet.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from consolidation import clauses
from memoryhub import scanner
from memoryhub.scanning.base import normalize
from memoryhub.scanning.pii import CATEGORY_LABELS, SPECIAL_CATEGORY

FACT = "fact"
PREFERENCE = "preference"
DIRECTIVE = "directive"
PERSONAL = "personal"
SECRET = "secret"
CHIT_CHAT = "chit_chat"
KINDS = (FACT, PREFERENCE, DIRECTIVE, PERSONAL, SECRET, CHIT_CHAT)
# Classes that are shown to the reviewer as refused findings.
REFUSED = (DIRECTIVE, PERSONAL, SECRET)

_REDACTED = "[REDACTED:"
# "<credential noun> is <value>" for a value shaped like a key, in words the
# scanner's secret rules do not all read yet ("Staging deploy key is
# stg-live-9f3b2c71d84e4a0f").
_SECRET_SAID = re.compile(
    r"\b(?:api[\s_-]?key|key|token|password|passcode|passphrase|secret|pin|credentials?|passwort|kennwort|"
    r"schlüssel|contraseña|clave|mot\s+de\s+passe|clé|jeton)\b[^.\n]{0,30}?(?:\bis\b|\bist\b|\bes\b|\best\b|[:=])"
    r"\s*[`'\"]?(?P<value>[^\s`'\"]{6,})",
    re.IGNORECASE,
)
_PREFERENCE = re.compile(
    r"\b(?:prefers?|preferred|likes?|dislikes?|loves?|hates?|wants?|rather|always|never|from\s+now\s+on|"
    r"bevorzug\w*|lieber|mag|möchte|immer|nie|prefier\w*|gusta\w*|siempre|nunca|préf[èe]r\w*|aime|toujours|"
    r"jamais|veut|quiere)\b|^(?:use|reply|answer|write|send|call|keep|avoid|do\s+not|don't|please)\b",
    re.IGNORECASE,
)
_CHATTY = re.compile(
    r"^(?:hi|hello|hey|thanks?|thank\s+you|cheers|ok(?:ay)?|great|perfect|cool|sure|yes|no|bye|good\s+"
    r"(?:morning|night)|danke|hallo|gracias|hola|merci|bonjour|salut)\b[\s!.,]*$"
    r"|^(?:can|could|would|will)\s+you\b|^(?:let\s+me\s+know|remind\s+me)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Verdict:
    kind: str
    text: str  # what may be promoted: the candidate, or its redacted form
    category: str = ""  # the act of a directive, the category of personal data, the rule of a secret
    rule: str = ""  # the scanner rule or clause cue that decided it
    reason: str = ""  # for the reviewer
    special: tuple[str, ...] = field(default=())  # special categories a promoted text still carries

    @property
    def promote(self) -> bool:
        return self.kind in (FACT, PREFERENCE) or (self.kind == PERSONAL and bool(self.special))

    @property
    def refused(self) -> bool:
        return self.kind in REFUSED and not self.promote


_MARK = re.compile(r"\[REDACTED:(?P<rule>[\w-]+)\]")


def _secret(text: str, finding: scanner.Finding | None) -> tuple[str, str] | None:
    if (mark := _MARK.search(text)) is not None:
        return mark.group("rule"), f"it held a secret the scanner redacted when it was logged ({mark.group('rule')})"
    if _REDACTED in text:
        return "redacted", "it held a secret the scanner redacted"
    if finding is not None and finding.category == "secret":
        return finding.rule, finding.detail
    for match in _SECRET_SAID.finditer(text):
        value = match.group("value").rstrip(".,;")
        if any(ch.isdigit() for ch in value) and any(ch.isalpha() for ch in value) and len(value) >= 8:
            return "credential_said", "it states the value of a key, token or password"
    return None


def _directive(text: str, finding: scanner.Finding | None, *, said: str, language: str, about_user: bool
               ) -> tuple[str, str, str] | None:
    if finding is not None and finding.category != "secret":
        # The scanner's detail may quote an injected phrase: not repeated.
        return finding.category, finding.rule, f"the memory scanner flags it ({finding.rule})"
    reader = clauses.reader()
    for piece, about in ((text, about_user), (said, False)):
        if not piece:
            continue
        reading = reader.read(piece, language=language, about_user=about)
        if reading.agent_directed:
            return reading.act, f"clause:{reading.act}", f'{clauses.ACT_LABELS[reading.act]} ("{reading.cue}")'
    return None


def mask(text: str, findings: list[scanner.Finding]) -> str:
    """`text` with the numbers and addresses of `findings` cut to their last
    characters: what an agent needs to recognise them, not to use them."""
    normalized = normalize(text)
    pieces: list[str] = []
    cursor = 0
    for finding in sorted(findings, key=lambda f: f.start):
        span = normalized[finding.start:finding.end]
        if finding.start < cursor or not any(ch.isdigit() for ch in span) and "@" not in span:
            continue
        compact = [ch for ch in span if ch.isalnum()]
        keep = 2 if finding.rule == "relative_contact" else 4
        shown = "".join(compact[-keep:])
        if "@" in span:
            shown = span.split("@", 1)[1]
            masked = f"…@{shown}"
        else:
            masked = f"…{shown}"
        pieces.append(normalized[cursor:finding.start])
        pieces.append(masked)
        cursor = finding.end
    pieces.append(normalized[cursor:])
    return "".join(pieces)


def classify(text: str, *, file: str = "USER.md", language: str = "en", policy: str = "flag",
             said: str = "") -> Verdict:
    """The verdict on a candidate entry `text` for `file`; `said` is the
    sentence it was taken from (the heuristic's), `policy` the workspace's
    PII policy (allow, flag, refuse). Memoised per scanner rules version:
    a run asks about the same entry more than once."""
    return _classify(text, file=file, language=language, policy=policy, said=said, rules=scanner.RULES_VERSION)


def cache_clear() -> None:
    _classify.cache_clear()


@functools.lru_cache(maxsize=8192)
def _classify(text: str, *, file: str, language: str, policy: str, said: str, rules: str) -> Verdict:
    del rules  # part of the cache key only
    words = _WORD.findall(text)
    if _MARK.fullmatch(text.strip()):
        rule = _MARK.fullmatch(text.strip()).group("rule")  # type: ignore[union-attr]
        return Verdict(SECRET, text, category=rule, rule=rule,
                       reason=f"Never kept in memory: the scanner redacted it when it was logged ({rule}).")
    # The sentence a candidate came from was scanned with its log entry at
    # gather; the candidate's own wording is scanned here, once.
    finding = scanner.scan(text)
    secret = _secret(text, finding) or (_secret(said, None) if said else None)
    if secret is not None:
        return Verdict(SECRET, text, category=secret[0], rule=secret[0],
                       reason=f"Never kept in memory: {secret[1]}.")
    about_user = file == "USER.md"
    directive = _directive(text, finding, said=said, language=language, about_user=about_user)
    if directive is not None:
        category, rule, detail = directive
        return Verdict(DIRECTIVE, text, category=category, rule=rule,
                       reason=f"An instruction aimed at the agent, not a fact about the user: {detail}. "
                       "Memory never grants what the agent's rules do not.")
    personal = scanner.scan_personal(text)
    if personal:
        categories = tuple(dict.fromkeys(SPECIAL_CATEGORY.get(f.rule, f.rule) for f in personal))
        labels = ", ".join(CATEGORY_LABELS.get(c, c) for c in categories)
        if policy == "allow":
            return Verdict(PERSONAL, mask(text, personal), category=categories[0], rule=personal[0].rule,
                           reason=f"Personal data of a special category ({labels}), kept because the workspace's "
                           "PII policy allows it, with its numbers masked; approving it needs an acknowledgement.",
                           special=categories)
        return Verdict(PERSONAL, text, category=categories[0], rule=personal[0].rule,
                       reason=f"Personal data of a special category ({labels}); the workspace's PII policy "
                       f"({policy}) does not let consolidation keep it.")
    if len(words) < 2 or text.rstrip().endswith("?") or _CHATTY.search(text.strip()):
        return Verdict(CHIT_CHAT, text, reason="Conversation, not something to remember.")
    if _PREFERENCE.search(text):
        return Verdict(PREFERENCE, text, reason="a stated preference")
    return Verdict(FACT, text, reason="a durable fact")


def refusal_summary(verdict: Verdict, *, text: str) -> str:
    """What a reviewer reads about a refused candidate: a directive as it
    was said (it is what they must judge), personal data and secrets by
    category only (their values stay in the log, behind its access rules)."""
    if verdict.kind == DIRECTIVE and verdict.rule.startswith("clause:"):
        return f"Refused an instruction aimed at the agent: {text}"
    if verdict.kind == DIRECTIVE:
        return f"Refused an instruction aimed at the agent ({verdict.rule})"
    if verdict.kind == PERSONAL:
        return f"Refused personal data ({CATEGORY_LABELS.get(verdict.category, verdict.category)})"
    return "Refused a secret"
