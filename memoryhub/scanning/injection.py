"""Prompt injection the structure model (structure.py) does not judge:
text that makes the agent hide things from its user, poses as a system
turn with chat-template tokens and role tags, or hides instructions from
the human reviewer (HTML comments, invisible elements). Overrides, persona
set-ups and claimed authority are the structure model's.

All rules read the folded view, in English, German, Spanish, French and
Chinese; folding already undid homoglyphs, leetspeak and letter-spacing.
"""

from __future__ import annotations

import re

from memoryhub.scanning.base import (
    APOSTROPHE,
    LINE_START,
    Finding,
    PhraseRule,
    compile_pattern,
    phrase,
    quote,
    views,
)

_A = APOSTROPHE

# --- concealment ------------------------------------------------------------------------------------

_NOBODY = r"(?:the\s+)?(?:user|human|operator|owner|reviewer|customer|admin)s?"
_NOBODY_DE = (
    r"(?:dem|den|der|die)\s+(?:nutzer(?:in)?|benutzer(?:in)?|kunden|kundin|anwender(?:in)?|prufer(?:in)?|admin)"
)
_NOBODY_ES = r"(?:al|a\s+la|a\s+los)\s+(?:usuari[oa]s?|cliente|clienta|revisor|administrador)"
_NOBODY_FR = r"(?:a\s+l'|a\s+la\s+|au\s+|aux\s+)(?:utilisat(?:eur|rice)s?|client(?:e)?s?|relecteur|administrateur)"


class ConcealmentRule(PhraseRule):
    """Text that asks the agent to keep something from the person it serves,
    the tell-tale of an instruction that would not survive being seen."""

    name = "concealment"
    category = "prompt_injection"
    phrases = (
        phrase(
            "tell telling inform informing alert alerting notify notifying",
            # "Don't tell the user to restart" is advice about wording, not
            # secrecy, hence the `to` exclusion.
            rf"\b(?:do\s+not|don{_A}?t|never|must\s+not|mustn{_A}?t|should\s+not"
            rf"|shouldn{_A}?t|without)\s+(?:tell|inform|alert|notify)(?:ing)?\s+{_NOBODY}\b(?!\s+to\b)",
            "make the agent hide something from the user",
            before=18,
        ),
        phrase(
            "mention mentioning reveal revealing disclose disclosing show showing say saying repeat repeating",
            rf"\b(?:do\s+not|don{_A}?t|never|must\s+not|without)\s+"
            rf"(?:mention|reveal|disclose|show|say|repeat)(?:ing)?\s+"
            rf"(?:this|these|that|it|any\s+of\s+this|the\s+above|these\s+instructions|this\s+(?:message|instruction|note))"
            rf"\s+(?:to|with)\s+{_NOBODY}\b",
            "make the agent hide something from the user",
            before=18,
        ),
        phrase(
            "keep hide",
            rf"(?:keep|hide)\s+(?:this|these|it|that)(?:\s+(?:instructions?|message|note))?"
            rf"\s+(?:(?:secret|hidden)\s+)?from\s+{_NOBODY}\b",
            "make the agent hide something from the user",
        ),
        phrase(
            "without",
            rf"without\s+{_NOBODY}(?:{_A}s?)?\s+(?:knowing|noticing|seeing|knowledge|being\s+aware)\b",
            "make the agent hide something from the user",
        ),
        # German.
        phrase(
            "sag sage erzahl erwahn verrat",
            rf"(?:sag(?:e|en)?|erzahl(?:e|en)?|erwahn(?:e|en)?|verrat(?:e|en)?)\s+(?:sie\s+)?(?:das\s+|dies\s+|es\s+)?"
            rf"{_NOBODY_DE}\s+(?:nichts|nicht|niemals|kein\s+wort)\b",
            "make the agent hide something from the user",
        ),
        phrase(
            "ohne",
            rf"ohne\s+dass\s+{_NOBODY_DE[:-1]}|nutzer|benutzer|kunde)\s+(?:es\s+|etwas\s+|davon\s+)?"
            rf"(?:merkt|wei(?:ss|ß)|erfahrt|mitbekommt|bemerkt)\b",
            "make the agent hide something from the user",
        ),
        phrase(
            "verheimlich verschweig",
            rf"(?:verheimlich|verschweig)(?:e|en)?\s+(?:sie\s+)?(?:das|dies|es)\s+(?:vor\s+)?{_NOBODY_DE}",
            "make the agent hide something from the user",
        ),
        # Spanish.
        phrase(
            "no",
            rf"no\s+(?:se\s+lo\s+|le\s+|les\s+)?(?:digas|digan|cuentes|menciones|informes|reveles|avises)(?:lo|nada)?"
            rf"(?:\s+(?:esto|nada|eso))?\s+{_NOBODY_ES}\b",
            "make the agent hide something from the user",
        ),
        phrase(
            "sin",
            r"sin\s+que\s+(?:el|la|los)\s+(?:usuari[oa]s?|cliente)\s+(?:lo\s+|se\s+)?(?:sepa|note|entere|enteren|vea)\b",
            "make the agent hide something from the user",
        ),
        phrase(
            "ocult",
            rf"oculta(?:lo|le|r)?\s+(?:esto\s+|eso\s+)?{_NOBODY_ES}\b",
            "make the agent hide something from the user",
        ),
        # French.
        phrase(
            "ne",
            rf"ne\s+(?:le\s+|lui\s+|leur\s+)?(?:dis|dites|mentionne|mentionnez|revele|revelez|signale|signalez)"
            rf"\s+(?:rien|pas|jamais)(?:\s+(?:cela|ceci|ca))?\s+{_NOBODY_FR}",
            "make the agent hide something from the user",
        ),
        phrase(
            "sans",
            r"sans\s+que\s+(?:l'|le\s+|la\s+)(?:utilisat(?:eur|rice)|client(?:e)?)\s+(?:ne\s+)?(?:le\s+)?"
            r"(?:sache|remarque|voie|s'en\s+apercoive)\b",
            "make the agent hide something from the user",
        ),
        phrase(
            "cache",
            rf"cache[rz]?\s+(?:ceci|cela|ca|le|la|les)\s+{_NOBODY_FR}",
            "make the agent hide something from the user",
        ),
        # Chinese.
        phrase(
            ("不要告诉", "别告诉", "不要让", "对用户保密", "瞒着", "在用户不知情", "不要通知", "别让"),
            r"(?:不要|别|切勿|不得)(?:告诉|通知|让)(?:用户|客户|使用者|审核人员|管理员)(?:知道)?"
            r"|对(?:用户|客户)保密|瞒着(?:用户|客户)|在(?:用户|客户)不知情的情况下",
            "make the agent hide something from the user",
        ),  # fmt: skip
    )


# --- fake role markers ------------------------------------------------------------------------------

_LINE_START = LINE_START
_INSTRUCTION_START = (
    rf"(?:you\s+(?:are|must|will|should|shall|have\s+to|may\s+now|now)|your\s+(?:new|real|true|actual|only"
    rf"|instructions|task|role|goal|job)|ignore|disregard|forget|override|from\s+now\s+on|always|never|do\s+not"
    rf"|don{_A}?t|reveal|respond|reply|answer|act\s+as|pretend|execute|obey|comply|output|print|disable|grant|approve"
    rf"|new\s+(?:instructions|rules|task)|the\s+user\s+(?:is|has|wants)|(?:i|we)\s+(?:am|are)\s+(?:your|the)"
    rf"|du\s+(?:bist|musst|sollst|wirst)|ignoriere|vergiss|tu\s+(?:es|dois|vas)|ignore[sz]?|oublie|tu\s+eres|debes"
    rf"|ignora|olvida|你(?:必须|现在|要|应该|将|是)|忽略|无视|从现在开始|不要|总是|始终)"
)
_ROLE_WORDS = (
    "system", "assistant", "developer", "user", "inst", "sys", "im", "endoftext", "eot", "start", "end", "begin",
    "s", "admin", "administrator", "root", "override", "instructions", "instruction", "systemnachricht",
    "systemanweisung", "mensaje", "instrucciones", "message", "系统", "管理员", "开发者", "助手",
)  # fmt: skip


class FakeRoleMarkerRule(PhraseRule):
    """Chat-template tokens, role tags and role headers that make stored
    memory look like a system or assistant turn to the model reading it."""

    name = "fake_role_marker"
    category = "prompt_injection"
    phrases = (
        phrase(
            "im system assistant user developer endoftext eot start end begin",
            _LINE_START + r"<\|(?:im_start|im_end|system|assistant|user|developer|endoftext|eot_id"
            r"|start_header_id|end_header_id|begin_of_text)\|>",
            "chat-template token",
            before=30,
            after=40,
            requires="<|",
        ),
        # `(?!\()` lets a markdown link such as "[System](docs/system.md)" through.
        phrase(
            "system sys inst assistant admin developer override",
            _LINE_START + r"\[/?(?:system|sys|inst|assistant|admin|developer|system\s+override|admin\s+override"
            r"|override)\](?!\()",
            "role tag",
            before=30,
            after=40,
            requires="[",
        ),
        phrase("sys", _LINE_START + r"<</?sys>>", "role tag", before=30, after=20, requires="<<"),
        phrase(
            "system assistant developer admin root override instructions instruction",
            # "<system>" in running text is often XML talk; a tag that opens
            # a line, or is followed by an instruction, is a fake turn.
            r"(?:" + _LINE_START + r"<(?:system|system_prompt|sys|assistant|developer|admin|root|override"
            r"|instructions)>|<(?:system|system_prompt|admin|developer|override|instructions)>[ \t\n]{0,5}"
            r"(?:[^\n<]{0,40}?\b)?" + _INSTRUCTION_START + ")",
            "role tag",
            before=30,
            after=120,
            requires="<",
        ),
        phrase(
            "system assistant developer",
            # "## System design" is a heading; "### System:" is a role header.
            _LINE_START + r"#{1,6}[ \t]{0,4}(?:system|assistant|developer)"
            r"(?:[ \t]{1,4}(?:prompt|message|instructions?))?[ \t*_]{0,4}:",
            "role header",
            before=30,
            after=40,
            requires="#",
        ),
        phrase(
            "system assistant developer",
            # A bare "System:" line is only a marker when what follows speaks
            # to the agent: "System: Debian 12" is an inventory note.
            _LINE_START + r"[*_]{0,2}(?:system|assistant|developer)[*_]{0,2}[ \t]{0,4}:[*_]{0,2}[ \t]{0,4}"
            r"(?:[^\n]{0,40}?\b)?" + _INSTRUCTION_START,
            "role header",
            before=30,
            after=120,
        ),
        phrase(
            "system admin administrator developer root",
            _LINE_START + r"[*_]{0,2}(?:system|admin|administrator|developer|root)[ \t_-]{0,3}override[*_]{0,2}"
            r"[ \t]{0,4}[:\]-]",
            "role header",
            before=30,
            after=60,
        ),
        phrase(
            "systemnachricht systemanweisung mensaje instrucciones message instructions instruction",
            _LINE_START + r"[*_]{0,2}(?:systemnachricht|systemanweisung|mensaje\s+del\s+sistema|instrucciones"
            r"\s+del\s+sistema|message\s+(?:du\s+)?systeme|instructions?\s+(?:du\s+)?systeme)[*_]{0,2}[ \t]{0,4}:"
            r"[ \t]{0,4}\S",
            "role header",
            before=30,
            after=80,
        ),
        phrase(
            ("系统", "管理员", "开发者", "助手"),
            _LINE_START + r"(?:\[(?:系统|系统提示|系统消息|管理员|开发者|助手)\]"
            r"|(?:系统|系统消息|系统提示|管理员|开发者)"
            r"\s{0,2}:\s{0,4}(?:[^\n]{0,20}?)" + _INSTRUCTION_START + ")",
            "role header",
            before=30,
            after=80,
        ),  # fmt: skip
        # Mid-line `</s>` is usually HTML strikethrough; at a line start, or
        # right before another marker, it is an end-of-turn token.
        phrase("s", _LINE_START + r"</s>", "end-of-turn token", before=30, after=10, requires="</s>"),
        phrase("s", r"</s>[ \t]{0,4}(?:<s>|\[inst\]|<\|)", "end-of-turn token", before=3, after=20, requires="</s>"),
    )

    def describe(self, match: re.Match[str], label: str) -> str:
        return (
            f'Text contains a fake {label} ("{quote(match.group())}"); '
            "memory must not pose as a system or assistant turn in the agent's prompt."
        )


# --- instructions hidden from the reviewer -------------------------------------------------------

_HIDDEN_TAG = re.compile(
    r"<(?:div|span|p|section|small|font)\b[^>]{0,600}?(?:display\s*:\s*none|visibility\s*:\s*hidden"
    r"|font-size\s*:\s*0|opacity\s*:\s*0(?:\.0+)?\b|\bhidden\b|aria-hidden)",
    re.IGNORECASE,
)
_MARKDOWN_COMMENT = re.compile(r"\[//\]:\s{0,3}#\s{0,3}\(")
# How much of a hidden block is read: enough for any instruction.
_BODY_CHARS = 4000


def _hidden_blocks(text: str) -> list[tuple[int, int, str]]:
    """(start, end, body) of every HTML comment, markdown comment and hidden
    element, found with str.find so the pass stays linear however many
    openers an adversary repeats: each search resumes past the block it
    just read."""
    blocks: list[tuple[int, int, str]] = []
    position = text.find("<!--")
    while position != -1:
        close = text.find("-->", position + 4)
        end = len(text) if close == -1 else close + 3
        blocks.append((position, end, text[position + 4 : min(end, position + 4 + _BODY_CHARS)]))
        if close == -1:
            break
        position = text.find("<!--", end)
    position = text.find("[//]:")
    while position != -1:
        line_end = text.find("\n", position)
        line_end = len(text) if line_end == -1 else line_end
        opener = _MARKDOWN_COMMENT.match(text, position, line_end)
        if opener is not None:
            close = text.find(")", opener.end(), line_end)
            if close != -1:
                blocks.append((position, close + 1, text[opener.end() : close]))
        position = text.find("[//]:", line_end)
    if any(word in text for word in ("display", "hidden", "visibility", "font-size", "opacity")):
        position = text.find("<")
        while position != -1:
            close = text.find(">", position)
            if close == -1:
                break
            if _HIDDEN_TAG.match(text, position, close):
                body_end = text.find("<", close)
                body_end = len(text) if body_end == -1 else body_end
                blocks.append((position, body_end, text[close + 1 : min(body_end, close + 1 + _BODY_CHARS)]))
            position = text.find("<", close)
    return blocks


# Who a hidden note is for: an AI, by any name.
_ADDRESSEE = compile_pattern(
    r"\b(?:ai|a\.i\.|assistant|agent|model|llm|bot|chatbot|gpt|chatgpt|claude|copilot|gemini|ki|ia|asistente"
    r"|agente|modelo|modele|assistente|robot)\b|助手|模型|人工智能|机器人|智能体"
)
# The AI spoken to, not spoken of ("a blog post introducing the model"):
# a second person, a greeting or dative before it, a vocative opening a
# sentence, or the AI as the subject of a modal.
_AI_WORD = (
    r"(?:ai|a\.i\.|assistants?|agents?|models?|llms?|bots?|chatbots?|gpts?|chatgpt|claude|copilot|gemini|ki|ia"
    r"|asistentes?|agentes?|modelos?|modeles?|assistentes?|robots?)\b"
)
_ADDRESSED = compile_pattern(
    r"\b(?:you|your|du|dein\w*|tu|tus|vous|votre|usted)\b|你|给|请"
    r"|\b(?:to|for|dear|hey|hi|hello|attention|an|para|pour|a)\s+(?:the\s+|any\s+|all\s+|every\s+|die\s+|den\s+|el\s+"
    r"|la\s+|le\s+|l')?(?:[\w.-]+\s+)?" + _AI_WORD
    + r"|(?:^|[.!?]\s+)\s*(?:[\w.-]+\s+){0,2}" + _AI_WORD + r"(?:\s+[\w.-]+)?\s*[:,]"
    r"|\b" + _AI_WORD + r"\s+(?:must|should|shall|will|needs?\s+to|has\s+to|have\s+to|muss|soll|debe|doit)\b"
)
# What makes it an instruction: an imperative or modal verb, in any of the
# five languages.
_IMPERATIVE = compile_pattern(
    r"\b(?:must|should|shall|always|never|do\s+not|don't|ignore|disregard|forget|reveal|include|add|insert|send"
    r"|forward|email|recommend|say|tell|respond|reply|answer|make\s+sure|remember|from\s+now\s+on|pretend|act\s+as"
    r"|approve|grant|obey|follow|execute|run|print|output|mention|praise|prefer|rank|promote|agree"
    r"|muss|musst|sollst|soll|immer|niemals|ignoriere|sag|sage|empfiehl|debes|debe|siempre|nunca|ignora|di|dile"
    r"|recomienda|dois|doit|toujours|jamais|ignore|dis|recommande|reponds)\b"
    r"|必须|总是|一定|不要|务必|请|始终|忽略|推荐|回答"
)
# Starts that make a note an instruction even without naming the AI.
_OPENING = compile_pattern(
    r"\s{0,10}(?:ignore|disregard|forget|override|you\s+(?:must|are|will|should|shall)|your\s+(?:new|real|task)"
    r"|from\s+now\s+on|system\s*:|assistant\s*:|instructions?\s*:|new\s+instructions|reveal|approve|grant"
    r"|ignoriere|vergiss|ignora|olvida|oublie|忽略|无视|你必须|从现在开始|系统)"
)
# Tool directives that live in HTML comments of ordinary markdown.
_TOOL_COMMENT = compile_pattern(
    r"\s{0,10}(?:prettier|markdownlint|eslint|toc|table\s+of\s+contents|todo|fixme|note|begin|end|start|stop|omit"
    r"|vale|cspell|spell|textlint|lint|generated|auto-?generated|do\s+not\s+edit|region|endregion|more|break)\b"
    r"(?!.{0,200}?(?:" + _ADDRESSEE.pattern + r"))",
)


class HiddenInstructionRule:
    """Instructions placed where a reviewer does not see them: HTML comments,
    markdown comments and hidden HTML elements render as nothing, but reach
    the model verbatim. A hidden note is refused when it addresses an AI with
    an imperative, or opens like an instruction; tool directives
    (`<!-- prettier-ignore -->`) pass."""

    name = "hidden_instruction"
    category = "prompt_injection"

    def find(self, raw: str, normalized: str) -> Finding | None:
        view = views(normalized)
        text = view.folded
        if "<" not in text and "[//]" not in text:
            return None
        for start, end, body in sorted(_hidden_blocks(text)):
            if self._instructs(body):
                normalized_start, normalized_end = view.span(start, end)
                return Finding(
                    rule=self.name,
                    category=self.category,
                    detail=(
                        f'Text hides an instruction from the reviewer ("{quote(text[start:end], 60)}"); '
                        "comments and hidden elements reach the model but not the eye."
                    ),
                    start=normalized_start,
                    end=normalized_end,
                )
        return None

    @staticmethod
    def _instructs(body: str) -> bool:
        if not body.strip():
            return False
        if _TOOL_COMMENT.match(body):
            return False
        if _OPENING.match(body):
            return True
        return _IMPERATIVE.search(body) is not None and _ADDRESSED.search(body) is not None
