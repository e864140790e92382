"""The `heuristic` backend: offline, deterministic, free.

Rules, applied in this order (same input, same output):

1. Read. A `note` log entry (the agent's own learning) and a user's
   sentence (cut by pysbd, so "Dr. Weber" and "z. B." do not end one)
   become candidate entries, written as third-person directives ("Prefers
   email for routine updates."), never as chat fragments; see
   consolidation.directives for the patterns (English, German, Spanish,
   French), corrections after a lead-in word included. Dates are resolved
   against the time the log entry was written, in the user's time zone
   when USER.md states one ("until Friday" → "until 2026-12-04", "next
   Friday" → "on 2026-12-11"). An entry in another language is reported as
   not understood (and read by the llm backend when configured).
2. Classify. Every candidate, and every sentence that asks to be kept,
   passes consolidation.classify: an instruction aimed at the agent,
   personal data of a special category (unless the workspace allows it,
   then masked) and secrets are refused and shown to the reviewer;
   questions and chat are dropped.
3. Merge. A candidate that says what an entry says (the same key words
   after normalisation, see consolidation.text) confirms that entry instead
   of adding a second one, in either file; the `merge` change cites the
   evidence of both. Duplicates already in a file are merged too (the
   earlier one is kept). A first-person entry confirmed by a directive
   takes the directive's wording.
4. Supersede. A candidate replaces an entry when both fill the same slot
   (consolidation.slots: package manager, indentation, time zone, reply
   language, editor, seat, home, address, manager, account number,
   appointment time, port …, or the older value ruled out: "4 spaces
   instead of tabs"), in either file: in place in its own file, or, when
   the older entry is in the other file, that entry is superseded there
   citing the newer one. "Email for routine updates" and "a phone call for
   urgent updates" are two slots, so both stay. A correction that fits no
   pattern is kept only when it replaces something.
5. Contradictions. Where an agent note and a user statement disagree about
   one slot, the user's statement is kept and the disagreement is flagged
   for the reviewer (a `conflict` change, or a `supersede` marked as a
   contradiction), never both kept.
6. Add. Anything else is appended.
7. Expire. An entry whose stated expiry has passed at the run's time is
   removed (a candidate already expired is never added). A dated event
   that has passed is rewritten in the past tense by the pipeline.

The cap is not this backend's business: the pipeline's compress pass makes
an over-cap file fit without losing a fact.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from decimal import Decimal

from consolidation import classify, dates, directives, language, slots, text
from consolidation import entries as md
from consolidation.backends.base import BackendResult, Change, FileState, Refusal, RunLimits, Signal
from consolidation.directives import MEMORY, USER

_REDACTED = "[REDACTED:"
_REDACTED_MARK = re.compile(r"\[REDACTED:[\w-]+\]")
# Facts that hold one value at a time, as directives read them.
_SINGLE_VALUED = {
    "name": re.compile(r"^(?:(?:first\s+|preferred\s+|nick)?name\s+(?:is|ist)|wants\s+to\s+be\s+called|call\s+me|"
                       r"se\s+llama|s['’]appelle|möchte\s+.+\s+genannt\s+werden|quiere\s+que\s+le\s+llamen|"
                       r"veut\s+être\s+appelé)\b", re.I),
    "home": re.compile(r"^(?:lives\s+in|i\s+live\s+in|is\s+based\s+in|is\s+located\s+in|wohnt\s+in|lebt\s+in|"
                       r"vive\s+en|habite|vit\s+à)\b", re.I),
    "employer": re.compile(r"^(?:works\s+(?:at|for)|arbeitet\s+(?:bei|für)|trabaja\s+(?:en|para)|"
                           r"travaille\s+(?:chez|pour))\b", re.I),
    "timezone": re.compile(r"^(?:time\s*zone\s+is|timezone\s+is|zeitzone\s+ist|zona\s+horaria\s+es|"
                           r"fuseau\s+horaire\s+est|is\s+in\s+the\s+\S+\s+time\s*zone)\b", re.I),
    "pronouns": re.compile(r"^pronouns\s+are\b", re.I),
    "role": re.compile(r"^(?:role|title|job\s+title|job)\s+is\b|^rolle\s+ist\b|^rol\s+es\b", re.I),
}
# Values of one kind fill a slot: a newer value of the same kind replaces
# the older one when the rest of the entry (the slot) is the same.
_VALUE_KINDS = {
    "channel": {"email", "call", "sms", "text", "slack", "teams", "whatsapp", "signal", "telegram", "letter", "zoom",
                "telefon", "teléfono", "téléphone", "chat", "voicemail"},
    "language": {"english", "german", "spanish", "french", "italian", "portuguese", "dutch", "japanese", "chinese",
                 "deutsch", "englisch", "spanisch", "französisch", "inglés", "alemán", "español", "francés",
                 "anglais", "allemand", "espagnol", "français"},
    "length": {"short", "long", "detailed", "verbose", "lang", "ausführlich", "largo", "detallado", "court",
               "détaillé", "longu"},
    "format": {"pdf", "markdown", "docx", "word", "html", "plain", "bullet", "table", "csv", "json", "prose"},
    "tone": {"formal", "informal", "casual", "friendly"},
    "tool": {"npm", "pnpm", "yarn", "pip", "poetry", "uv", "conda", "tabs", "tab", "spaces", "space", "vim", "emacs",
             "vscode", "bun"},
    "weekday": {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"},
    "daytime": {"morning", "afternoon", "evening", "night", "noon"},
}
_VALUE_OF = {text.stem(word): kind for kind, words in _VALUE_KINDS.items() for word in words}
_NUMBER = re.compile(r"^\d[\d.:/-]*$")
_NEGATED_OBJECT = re.compile(r"\b(?:not|instead\s+of|rather\s+than|nicht|statt|en\s+lugar\s+de|pas|plutôt\s+que)\s+"
                             r"(?P<object>[\w'.+#-]+)", re.IGNORECASE)


def _values(entry: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for word in text.fact_key(entry):
        kind = _VALUE_OF.get(word) or ("number" if _NUMBER.match(word) else None)
        if kind is not None:
            found.setdefault(kind, set()).add(word)
    return found


@functools.lru_cache(maxsize=8192)
def _lead(entry: str) -> str | None:
    for word in text.tokens(entry):
        if word in text.FILLERS or word in text.NEGATIONS or word in text.SUBJECTS:
            continue
        if word in ("always", "do", "does", "please", "immer", "siempre", "toujours", "jamais", "nunca", "nie"):
            continue
        return text.stem(word)
    return None


def _single_valued(entry: str) -> str | None:
    stripped = entry.strip()
    return next((slot for slot, pattern in _SINGLE_VALUED.items() if pattern.match(stripped)), None)


@functools.lru_cache(maxsize=8192)
def same_slot(old: str, new: str) -> str | None:
    """Why `new` replaces `old`, or None when both can stand (see rule 4)."""
    found = slots.supersedes(old, new)
    if found is not None:
        return found
    slot = _single_valued(new)
    if slot is not None and _single_valued(old) == slot:
        return f"both give the {slot}; a person has one at a time"
    old_key, new_key = text.fact_key(old), text.fact_key(new)
    if old_key and old_key == new_key and text.is_negative(old) != text.is_negative(new):
        return "the newer one says the opposite"
    lead = _lead(new)
    if lead is None or lead != _lead(old):
        return None
    negated = {text.stem(m.group("object").lower().rstrip(".,;:")) for m in _NEGATED_OBJECT.finditer(new)}
    ruled_out = negated & old_key
    if ruled_out:
        return f'the newer one rules out "{sorted(ruled_out)[0]}"'
    old_values, new_values = _values(old), _values(new)
    for kind in sorted(set(old_values) & set(new_values)):
        if old_values[kind] == new_values[kind]:
            continue
        old_slot = old_key - set().union(*old_values.values())
        new_slot = new_key - set().union(*new_values.values())
        if old_slot == new_slot:
            return f"the same slot ({', '.join(sorted(old_slot)) or lead}) with another {kind}"
    return None


@dataclass(frozen=True)
class Candidate:
    text: str
    file: str
    signal: Signal
    why: str
    language: str
    said: str = ""  # the sentence it was read from
    correction: bool = False
    conditional: bool = False  # kept only if it replaces an entry of the same slot


# A sentence that asks to be kept (remember, a standing rule, an order to
# the agent): if the classifier refuses it, the reviewer is told.
_INTENT = re.compile(
    r"\b(?:remember|don't\s+forget|keep\s+in\s+mind|always|never|from\s+now\s+on|going\s+forward|whenever|"
    r"every\s+time|if\s+i\s+ever|when\s+i\s+(?:say|ask)|you\s+(?:can|may|should|must)|just|please|my\s+\w+|"
    r"merk|vergiss|immer|nie|ab\s+jetzt|ab\s+sofort|künftig|recuerda|siempre|nunca|a\s+partir\s+de\s+ahora|"
    r"rappelle|souviens|toujours|jamais|désormais|dorénavant)\b",
    re.IGNORECASE,
)


def extract(signal: Signal, language_code: str | None = None, *, tz: tzinfo | None = None) -> list[Candidate]:
    """The candidate entries one log entry offers (none for chat, assistant
    turns and tool output, which are never promoted). A user sentence that
    yields no candidate but asks to be kept is offered as it was said, so
    that the classifier can refuse it in the open."""
    if signal.role not in ("note", "user"):
        return []
    lang = language_code or directives.detect_language(signal.content)
    found: list[Candidate] = []
    if signal.role == "note":
        pieces = [line for line in md.parse(signal.content) if not md.is_heading(line)]
        for line in pieces:
            directive = directives.from_note(line, language=lang)
            if directive is not None:
                found.append(_candidate(directive, signal, f"{directive.why} (log entry {signal.id})", line, tz))
    else:
        for sentence in language.sentences(signal.content, lang if lang in language.SUPPORTED else "en"):
            if _REDACTED in sentence and _INTENT.search(sentence):
                # Asked to keep something the scanner redacted at insert (a
                # card number, a password): refused in the open, by rule.
                found.append(Candidate(_REDACTED_MARK.search(sentence).group(0), USER, signal,  # type: ignore[union-attr]
                                       f"said by the user (log entry {signal.id})", lang, said=sentence,
                                       conditional=True))
            sentence = _without_redacted(sentence)
            directive = directives.from_user(sentence.strip(), language=lang)
            if directive is not None:
                found.append(_candidate(directive, signal, f"{directive.why} (log entry {signal.id})", sentence, tz))
            elif sentence.strip() and not sentence.rstrip().endswith("?") and _INTENT.search(sentence):
                as_said = directives.finish(sentence)
                if as_said:
                    found.append(Candidate(as_said, USER, signal, f"said by the user (log entry {signal.id})",
                                           lang, said=sentence, conditional=True))
    # One word ("Remember me?") is not a fact worth an entry, and a secret the
    # scanner redacted stays out of memory together with what was said about
    # it (its marker alone goes on, for the classifier to refuse in the open).
    return [c for c in found if (len(text.tokens(c.text)) >= 2 and _REDACTED not in c.text)
            or _REDACTED_MARK.fullmatch(c.text)]


_CLAUSE = re.compile(r",\s+(?:and|but|also)\s+|;\s+|,\s+(?=(?:my|i|the)\b)", re.IGNORECASE)


def _without_redacted(sentence: str) -> str:
    """The sentence without the clauses that held a secret the scanner
    redacted ("…, and my password is [REDACTED:…]"): nothing said about a
    secret is kept, the rest of the sentence is."""
    if _REDACTED not in sentence:
        return sentence
    clauses = [clause for clause in _CLAUSE.split(sentence) if _REDACTED not in clause]
    return ", ".join(clauses)


def _candidate(directive: directives.Directive, signal: Signal, why: str, said: str, tz: tzinfo | None) -> Candidate:
    entry = dates.resolve_relative(directive.text, at=signal.created_at, language=directive.language, tz=tz)
    return Candidate(entry, directive.target, signal, why, directive.language, said=said,
                     correction=directive.correction, conditional=directive.conditional)


def understood(signal: Signal) -> tuple[bool, str]:
    """Whether the heuristic can read this log entry at all, and its language
    (an ISO 639-1 code for one it cannot read)."""
    if signal.role not in ("note", "user"):
        return True, ""
    code = language.detect(signal.content)
    if code in language.SUPPORTED or code == "unknown":
        return True, code
    return False, code


_FIRST_PERSON_ENTRY = re.compile(r"^(?:i|i'm|i’m|i'd|i’d|my|ich|mein|yo|mi|je|j['’]|mon|ma)\b", re.IGNORECASE)


@dataclass
class _Item:
    text: str
    age: tuple[int, int]  # (0, position) for prior entries, (1, log id) for new ones: smaller is older
    evidence: list[int] = field(default_factory=list)
    sources: set[str] = field(default_factory=set)  # roles that said it in this run: user | note

    @property
    def is_heading(self) -> bool:
        return md.is_heading(self.text)


def _other(kind: str) -> str:
    return MEMORY if kind == USER else USER


class HeuristicBackend:
    name = "heuristic"

    def consolidate(
        self, *, agent_slug: str, files: dict[str, FileState], signals: list[Signal], now: datetime,
        limits: RunLimits | None = None,
    ) -> BackendResult:
        policy = limits.pii_policy if limits is not None else "flag"
        changes: list[Change] = []
        refused: list[Refusal] = []
        items = {
            kind: [_Item(entry, (0, i), list(state.evidence_of(i))) for i, entry in enumerate(state.entries)]
            for kind, state in files.items()
        }
        for kind in items:
            items[kind] = self._merge_existing(kind, items[kind], changes)
        tz = dates.user_timezone(files[USER].entries) if USER in files else None
        not_understood: list[dict[str, object]] = []
        for signal in sorted(signals, key=lambda s: s.id):
            readable, code = understood(signal)
            if not readable:
                not_understood.append({"id": signal.id, "language": code or "other"})
                continue
            for candidate in extract(signal, code or None, tz=tz):
                if candidate.file not in items or not candidate.text:
                    continue
                verdict = classify.classify(candidate.text, file=candidate.file, language=candidate.language,
                                            policy=policy, said=candidate.said)
                if verdict.refused:
                    refused.append(Refusal(
                            kind=verdict.kind, category=verdict.category, file=candidate.file,
                        evidence=(signal.id,), summary=classify.refusal_summary(verdict, text=candidate.text),
                        reason=verdict.reason, rule=verdict.rule))
                    continue
                if verdict.kind == classify.CHIT_CHAT:
                    continue
                if candidate.conditional and not candidate.correction:
                    continue  # said with intent, but neither a fact nor refused: chat
                kept = Candidate(verdict.text, candidate.file, signal,
                                 f"{candidate.why}; {verdict.reason}" if verdict.special else candidate.why,
                                 candidate.language, candidate.said, candidate.correction, candidate.conditional)
                self._absorb(kept, items, changes, now)
        for kind in items:
            items[kind] = self._expire(kind, items[kind], changes, now)
        return BackendResult(
            files={kind: [item.text for item in kind_items] for kind, kind_items in items.items()},
            changes=changes,
            model="heuristic",
            tokens_in=0,
            tokens_out=0,
            cost_usd=Decimal("0"),
            not_understood=not_understood,
            refused=_unique(refused),
        )

    # --- the rules -------------------------------------------------------------------

    def _merge_existing(self, kind: str, items: list[_Item], changes: list[Change]) -> list[_Item]:
        kept: list[_Item] = []
        for item in items:
            keeper = None if item.is_heading else next(
                (k for k in kept if not k.is_heading and text.same_fact(k.text, item.text)), None
            )
            if keeper is None:
                kept.append(item)
                continue
            keeper.evidence.extend(i for i in item.evidence if i not in keeper.evidence)
            changes.append(Change(
                kind="merge",
                file=kind,
                summary=f"Merge duplicate entries of {kind} into: {keeper.text}",
                reason=f'"{item.text}" says what "{keeper.text}" says; one entry is kept.',
                evidence=tuple(keeper.evidence),
                before=item.text,
                after=keeper.text,
            ))
        return kept

    def _absorb(self, candidate: Candidate, items: dict[str, list[_Item]], changes: list[Change],
                now: datetime) -> None:
        kind, new_text, log_id, role = candidate.file, candidate.text, candidate.signal.id, candidate.signal.role
        if dates.is_expired(new_text, now):
            return
        own = items[kind]
        other_kind = _other(kind)
        other = items.get(other_kind, [])
        for pool_kind, pool in ((kind, own), (other_kind, other)):
            facts = [item for item in pool if not item.is_heading]
            duplicate = next((item for item in facts if text.same_fact(item.text, new_text)), None)
            if duplicate is None:
                continue
            if candidate.conditional:
                return  # a correction that says nothing new
            if log_id not in duplicate.evidence:
                duplicate.evidence.append(log_id)
            duplicate.sources.add(role)
            before = duplicate.text
            if _FIRST_PERSON_ENTRY.match(before) and not _FIRST_PERSON_ENTRY.match(new_text):
                duplicate.text = new_text  # the directive's wording replaces a chat fragment
            elif text.subsumes(new_text, before) and pool_kind == kind:
                duplicate.text = new_text  # the newer statement says all the older one does, and more
            changes.append(Change(
                kind="merge",
                file=pool_kind,
                summary=f"Merge a repeated statement into {pool_kind}: {duplicate.text}",
                reason=f'"{new_text}" says again what "{before}" says ({candidate.why}); '
                "it confirms the entry instead of adding a duplicate.",
                evidence=tuple(duplicate.evidence),
                before=before if before != duplicate.text else new_text,
                after=duplicate.text,
            ))
            return
        replaced_here = False
        superseded_elsewhere: list[tuple[_Item, str, bool]] = []
        for item in [i for i in own if not i.is_heading]:
            why = same_slot(item.text, new_text)
            if why is None:
                continue
            if role == "note" and "user" in item.sources:
                # The user said otherwise in this run: their word stands.
                changes.append(_conflict(kind, new_text, item, why, log_id))
                return
            before, before_sources = item.text, set(item.sources)
            contradiction = (role == "user" and "note" in before_sources) or (role == "note" and item.age[0] == 0)
            evidence = (log_id,)
            item.text, item.age, item.evidence, item.sources = new_text, (1, log_id), [log_id], {role}
            changes.append(Change(
                kind="supersede",
                file=kind,
                summary=f"Supersede in {kind}: {before} → {new_text}",
                reason=self._supersede_reason(why, candidate, contradiction, role),
                evidence=evidence,
                before=before,
                after=new_text,
                flag="contradiction" if contradiction else None,
            ))
            replaced_here = True
            break
        for item in [i for i in other if not i.is_heading]:
            why = same_slot(item.text, new_text)
            if why is None:
                continue
            if role == "note" and "user" in item.sources:
                changes.append(_conflict(kind, new_text, item, why, log_id, where=f" ({other_kind})"))
                return
            contradiction = (role == "user" and "note" in item.sources) or (role == "note" and item.age[0] == 0)
            superseded_elsewhere.append((item, why, contradiction))
        if candidate.conditional and not replaced_here and not superseded_elsewhere:
            return
        for item, why, contradiction in superseded_elsewhere:
            other.remove(item)
            changes.append(Change(
                kind="supersede",
                file=other_kind,
                summary=f"Supersede in {other_kind}: {item.text} → {new_text} (now in {kind})",
                reason=self._supersede_reason(why, candidate, contradiction, role)
                + f' The newer statement is kept in {kind}: "{new_text}".',
                evidence=tuple(dict.fromkeys((log_id, *item.evidence))),
                before=item.text,
                after=None,
                flag="contradiction" if contradiction else None,
                replaced_by=new_text,
                replaced_in=kind,
            ))
        if replaced_here:
            return
        own.append(_Item(new_text, (1, log_id), [log_id], {role}))
        changes.append(Change(
            kind="add",
            file=kind,
            summary=f"Add to {kind}: {new_text}",
            reason=f"New: {candidate.why}."
            + (f" It replaces {len(superseded_elsewhere)} entry of {other_kind} (see below)."
               if superseded_elsewhere else ""),
            evidence=(log_id,),
            before=None,
            after=new_text,
        ))

    @staticmethod
    def _supersede_reason(why: str, candidate: Candidate, contradiction: bool, role: str) -> str:
        said = " It was said as a correction." if candidate.correction else ""
        reason = f"Replaced by a newer statement on the same subject: {why}; {candidate.why}.{said}"
        if contradiction:
            reason += (" The agent's note and the user's statement disagree here; the user's word is kept."
                       if role == "user" else
                       " Only an agent note says so: check it against what the user said.")
        return reason

    def _expire(self, kind: str, items: list[_Item], changes: list[Change], now: datetime) -> list[_Item]:
        kept: list[_Item] = []
        for item in items:
            found = None if item.is_heading else dates.expiry_of(item.text)
            if found is None or found[1] >= now.date():
                kept.append(item)
                continue
            phrase, _ = found
            changes.append(Change(
                kind="expire",
                file=kind,
                summary=f"Expire from {kind}: {item.text}",
                reason=f'Its stated expiry ("{phrase}") has passed: the run is dated {now.date().isoformat()}.',
                evidence=tuple(item.evidence),
                before=item.text,
                after=None,
            ))
        return kept


def _conflict(kind: str, new_text: str, item: _Item, why: str, log_id: int, where: str = "") -> Change:
    """The agent's note against what the user said in this run: the user's
    word stands and the reviewer is told."""
    return Change(
        kind="conflict",
        file=kind,
        summary=f'Contradiction: the agent noted "{new_text}", but the user said "{item.text}"{where}',
        reason=f"{why}; the user's own statement is kept and the agent's note is not applied. "
        "Check which one is right.",
        evidence=(*item.evidence, log_id),
        flag="contradiction",
    )


def _unique(refused: list[Refusal]) -> list[Refusal]:
    seen: set[tuple[str, str, tuple[int, ...]]] = set()
    found: list[Refusal] = []
    for refusal in refused:
        key = (refusal.kind, refusal.category, refusal.evidence)
        if key not in seen:
            seen.add(key)
            found.append(refusal)
    return found


__all__ = ("USER", "MEMORY", "HeuristicBackend", "extract", "same_slot", "understood")
