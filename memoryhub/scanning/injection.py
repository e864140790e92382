"""Prompt injection: text that tries to replace what the agent was told
("ignore previous instructions"), hand it a new identity, make it hide
things from its user, pose as a system turn, or hide instructions from the
human reviewer (HTML comments, invisible elements).

All rules read the folded view, in English, German, Spanish, French and
Chinese; folding already undid homoglyphs, leetspeak and letter-spacing.
"""

from __future__ import annotations

import re

from memoryhub.scanning.base import (
    APOSTROPHE,
    LINE_START,
    SEP,
    WORD,
    Finding,
    PhraseRule,
    compile_pattern,
    phrase,
    quote,
    views,
)

_A = APOSTROPHE

# --- instruction override ---------------------------------------------------------------------

_OVERRIDE_NOUNS_EN = (
    r"(?:instructions?|rules?|prompts?|directives?|guidelines?|guidance|constraints?|orders|programming)"
)


class InstructionOverrideRule(PhraseRule):
    """Text that tries to replace whatever the agent was told with what the
    memory says: "ignore previous instructions", "vergiss alle vorherigen
    Anweisungen", "忽略之前的所有指令"."""

    name = "prompt_injection"
    category = "prompt_injection"
    phrases = (
        phrase(
            "ignor disregard forget discard overrid bypass",
            rf"(?:ignor(?:e|ing)|disregard(?:ing)?|forget(?:ting)?|discard(?:ing)?|overrid(?:e|ing)|bypass(?:ing)?)"
            rf"(?:{SEP}(?:all|any|every|each|the|your|my|of|these|those|such)){{0,3}}"
            rf"{SEP}(?:previous|prior|above|earlier|preceding|foregoing|initial|original|system|developer)"
            rf"(?:{SEP}(?:and|or){SEP}{WORD})?(?:{SEP}{WORD}){{0,2}}?{SEP}{_OVERRIDE_NOUNS_EN}\b",
            "override the agent's instructions",
            vocabulary="ignore disregard forget all any the your previous prior above earlier system instructions "
            "rules prompts directives guidelines",
        ),
        phrase(
            "ignor disregard forget",
            rf"(?:ignore|disregard|forget){SEP}(?:all|everything|anything)"
            rf"(?:{SEP}(?:of|the|that|this|you|was|were|have|been|written|said|stated|text)){{0,4}}"
            rf"{SEP}(?:above|told|instructed|taught|so{SEP}far|until{SEP}now|up{SEP}to{SEP}now)\b",
            "override the agent's instructions",
            vocabulary="everything anything you were told so far until now above",
        ),
        phrase(
            "ignor disregard forget",
            rf"(?:ignore|disregard|forget){SEP}(?:all|any|every)(?:{SEP}(?:of|the|your|my|these|those|such|other)){{0,2}}"
            rf"{SEP}(?:instructions|rules|prompts|directives|guidelines|guidance|constraints|restrictions)\b"
            r"(?![ \t]{1,3}(?:about|on|for|regarding)\b)",
            "override the agent's instructions",
        ),
        phrase(
            "ignor disregard forget overrid overwrit bypass circumvent disabl abandon",
            rf"(?:ignore|disregard|forget|override|overwrite|bypass|circumvent|disable|abandon)"
            rf"(?:{SEP}(?:all|any|of)){{0,2}}{SEP}your"
            rf"(?:{SEP}(?:own|current|original|initial|previous|prior|system|safety|core|default|existing"
            rf"|real|given|programmed|built-in|builtin|content)){{0,2}}"
            rf"{SEP}(?:instructions?|rules|guidelines|programming|directives|restrictions|guardrails"
            rf"|constraints|prompt|filters?|polic(?:y|ies)|training)\b",
            "override the agent's instructions",
            vocabulary="override overwrite bypass circumvent disable abandon your own safety guardrails "
            "restrictions programming",
        ),
        phrase(
            "ignor disregard forget set put",
            rf"(?:ignore|disregard|forget|set{SEP}aside|put{SEP}aside)(?:{SEP}(?:all|any))?(?:{SEP}(?:the|your))?"
            rf"{SEP}(?:instructions|rules|guidelines|directives)(?:{SEP}(?:that|which))?{SEP}(?:you{SEP}(?:were|have{SEP}been"
            rf"|got){SEP}given|you{SEP}(?:received|got)|given{SEP}(?:to{SEP}you{SEP})?(?:earlier|before|above|previously))\b",
            "override the agent's instructions",
            vocabulary="set aside put aside given earlier received",
        ),
        phrase(
            "none no",
            rf"(?:none{SEP}of|no){SEP}(?:your|the)(?:{SEP}(?:earlier|previous|prior|original|old|initial)){{1,2}}"
            rf"{SEP}(?:instructions|rules|guidelines|directives){SEP}(?:apply|applies|matter|count|stand|hold)\b",
            "declare the agent's instructions void",
        ),
        phrase(
            "stop quit ceas",
            rf"(?:stop|quit|cease){SEP}(?:following|obeying|using|applying|respecting)"
            rf"{SEP}(?:your|the|all|any|those|these)(?:{SEP}{WORD}){{0,2}}?"
            rf"{SEP}(?:instructions|rules|guidelines|prompt|directives|restrictions|guardrails)\b",
            "override the agent's instructions",
            vocabulary="stop following obeying",
        ),
        phrase(
            "previous above prior earlier original system initial",
            rf"(?:previous|above|prior|earlier|original|system|initial){SEP}(?:instructions|rules|prompts?|directives)"
            rf"{SEP}(?:are|is|were|was)(?:{SEP}now)?{SEP}(?:void|null|invalid|fake|obsolete|cancell?ed|revoked"
            rf"|superseded|outdated|no{SEP}longer{SEP}valid|not{SEP}valid|replaced|overridden|suspended)\b",
            "declare the agent's instructions void",
            vocabulary="are is were void invalid obsolete cancelled revoked superseded",
        ),
        phrase(
            "your",
            rf"your{SEP}new{SEP}(?:system{SEP}prompt|instructions|directives|orders)\b",
            "replace the agent's system prompt",
            vocabulary="your new system prompt",
        ),
        phrase(
            "new real actual true secret hidden priority overrid",
            rf"(?:new|real|actual|true|secret|hidden|priority|override){SEP}(?:system{SEP})?"
            rf"(?:prompt|instructions?|directives|message)[ \t*_]{{0,3}}(?::|\]|>|-{{2,}}|={{2,}}|\n)",
            "replace the agent's system prompt",
        ),
        phrase(
            "here this below begin start enter activat",
            rf"(?:here\s+is|here{_A}s|this\s+is|below\s+is|begin|start|enter|activate)"
            rf"\s+(?:the\s+|a\s+|your\s+|this\s+)?new{SEP}system{SEP}prompt\b",
            "replace the agent's system prompt",
        ),
        # German.
        phrase(
            "ignor missacht vergiss vergess verwirf uberschreib umgeh setz",
            rf"(?:ignorier(?:e|en|t)?|missacht(?:e|en)?|vergiss|vergessen|verwirf|uberschreib(?:e|en)?|umgeh(?:e|en)?"
            rf"|setz(?:e|en)?{SEP}(?:\w+{SEP}){{0,3}}?au(?:ss|ß)er{SEP}kraft)"
            rf"(?:{SEP}(?:sie|du|alle|alles|samtliche|die|deine|ihre|bisherigen|vorherigen|vorigen|fruheren|obigen"
            rf"|bisherige|vorherige|vorige|fruhere|obige|ursprunglichen|ursprungliche|system|einfach|bitte|jetzt)){{0,4}}"
            rf"{SEP}(?:anweisungen|anweisung|instruktionen|regeln|vorgaben|richtlinien|befehle|prompts?|systemprompts?"
            rf"|systemanweisungen|einschrankungen|programmierung)\b",
            "override the agent's instructions",
            vocabulary="ignoriere vergiss alle vorherigen anweisungen regeln",
        ),
        phrase(
            "ignor vergiss missacht",
            rf"(?:ignorier(?:e|en)?|vergiss|missacht(?:e|en)?){SEP}(?:sie{SEP})?(?:alles|all{SEP}das)"
            rf"(?:{SEP}{WORD}){{0,5}}?{SEP}(?:oben|bisher|zuvor|vorher)\b",
            "override the agent's instructions",
        ),
        # Spanish.
        phrase(
            "ignor olvid descart omit anul desobedec haz pasa",
            rf"(?:ignora|ignore|ignorar|ignorad|ignoren|olvida|olvide|olvidar|olviden|descarta|omite|anula"
            rf"|desobedece|haz{SEP}caso{SEP}omiso{SEP}(?:de|a)|pasa{SEP}por{SEP}alto)"
            rf"(?:{SEP}(?:todas|todos|las|los|tus|sus|cualquier|toda|de|a)){{0,3}}"
            rf"{SEP}(?:instrucciones|indicaciones|reglas|normas|directrices|ordenes|prompt|restricciones)"
            rf"{SEP}(?:anteriores|previas|originales|iniciales|del{SEP}sistema|de{SEP}arriba|que{SEP}te{SEP}\w+)\b",
            "override the agent's instructions",
            vocabulary="ignora todas las instrucciones anteriores olvida tus reglas",
        ),
        phrase(
            "ignor olvid",
            rf"(?:ignora|ignore|olvida|olvide)(?:{SEP}(?:todas|todos))?{SEP}(?:tus|sus){SEP}"
            rf"(?:instrucciones|reglas|normas|directrices|restricciones)\b",
            "override the agent's instructions",
        ),
        phrase(
            "ignor olvid",
            rf"(?:ignora|ignore|olvida|olvide){SEP}todo{SEP}lo{SEP}(?:anterior|de{SEP}arriba|que{SEP}te{SEP}\w+)\b",
            "override the agent's instructions",
        ),
        # French.
        phrase(
            "ignor oubli ne fais outrepass contourn annul",
            rf"(?:ignore|ignores|ignorez|ignorer|oublie|oubliez|oublier|outrepasse|contourne|annule"
            rf"|ne{SEP}(?:tiens|tenez){SEP}(?:pas|plus){SEP}compte{SEP}(?:des|du|de|d')|fais{SEP}abstraction{SEP}(?:des|de|d'))"
            rf"(?:{SEP}(?:toutes|tous|les|tes|vos|de|des|ces|ta|votre)){{0,3}}"
            rf"{SEP}(?:instructions|consignes|regles|directives|ordres|prompt|restrictions|indications)"
            rf"{SEP}(?:precedentes|anterieures|initiales|originales|du{SEP}systeme|systeme|ci-dessus|d'avant)\b",
            "override the agent's instructions",
            vocabulary="ignore oublie toutes les instructions precedentes tes consignes",
        ),
        phrase(
            "ignor oubli",
            rf"(?:ignore|ignorez|oublie|oubliez)(?:{SEP}(?:toutes|tous))?{SEP}(?:tes|vos){SEP}"
            rf"(?:instructions|consignes|regles|directives|restrictions)\b",
            "override the agent's instructions",
        ),
        phrase(
            "ignor oubli",
            rf"(?:ignore|ignorez|oublie|oubliez){SEP}tout{SEP}ce{SEP}qui{SEP}(?:precede|est{SEP}au-dessus"
            rf"|t'a{SEP}ete{SEP}dit|vous{SEP}a{SEP}ete{SEP}dit)\b",
            "override the agent's instructions",
        ),
        # Chinese.
        phrase(
            ("忽略", "无视", "忘记", "忘掉", "不要理会", "别管", "丢弃", "抛弃", "跳过", "绕过", "覆盖", "不用管",
             "不必遵守"),
            r"(?:忽略|无视|忘记|忘掉|不要理会|别管|丢弃|抛弃|跳过|绕过|覆盖|不用管|不必遵守)\s{0,2}"
            r"(?:(?:之前|以前|先前|上面|上述|以上|前面|原来|原有|原始|所有|全部|你的|系统|一切|任何|给你的|开发者)\s{0,2}的?\s{0,2}){1,4}"
            r"(?:指令|指示|规则|提示词?|命令|要求|设定|限制|约束|说明|内容|规定)",
            "override the agent's instructions",
        ),  # fmt: skip
        phrase(
            ("你的新", "新的系统", "新系统"),
            r"(?:你的新|新的系统|新系统)(?:的)?(?:系统)?(?:提示词?|指令|指示)\s{0,2}(?:是|为|:|如下)",
            "replace the agent's system prompt",
        ),
    )


# --- role hijack ----------------------------------------------------------------------------------

# The identities a hijack hands the agent. Ordinary role changes ("you are
# now the on-call engineer") must pass, so only AI personas and the
# well-known jailbreak states count.
_PERSONA = (
    rf"(?:(?:a|an|the|my|called|named|known\s+as)\b(?:{SEP}{WORD}){{0,4}}?{SEP}"
    rf"(?:ai|assistant|model|bot|chatbot|persona|character|llm|gpt|chatgpt)\b"
    rf"|dan\b|jailbroken\b|unrestricted\b|unfiltered\b|uncensored\b|unbound\b|free\s+(?:from|of)\b"
    rf"|no\s+longer\s+(?:bound|restricted|limited|an?\s+(?:ai|assistant|model))\b"
    rf"|in\s+(?:developer|dev|god|admin|jailbreak|unrestricted|dan)\s+mode\b)"
)
_UNLIMITED = (
    r"(?:dan|jailbroken|jailbreak|unrestricted|unfiltered|uncensored|unbound"
    r"|uneingeschrankte?n?|ungefiltert(?:e|en)?|zensurfreie?|sin\s+(?:restricciones|filtros|limites|reglas|censura)"
    r"|sans\s+(?:restrictions?|filtres?|limites?|regles?|censure)|ohne\s+(?:einschrankungen|filter|regeln|grenzen|zensur)"
    r"|libre|libere|frei)"
)


class RoleHijackRule(PhraseRule):
    """Text that tells the agent it is now someone else, unrestricted."""

    name = "role_hijack"
    category = "prompt_injection"
    phrases = (
        phrase("now", rf"\byou\s+are\s+now\s+{_PERSONA}", "give the agent a new identity", before=10),
        phrase(
            "now",
            rf"\bfrom\s+now\s+on\W{{1,5}}you(?:\s+are|{_A}re|\s+will\s+be|{_A}ll\s+be|\s+shall\s+be)\s+{_PERSONA}",
            "give the agent a new identity",
            before=10,
        ),
        phrase(
            "now",
            r"\bfrom\s+now\s+on\W{1,5}(?:you\s+(?:will\s+)?)?(?:act|behave|respond|roleplay|role-play)\s+as\b",
            "give the agent a new identity",
            before=10,
        ),
        phrase(
            "act behav respond roleplay role pose",
            rf"(?:act|behave|respond|roleplay|role-play|pose)\s+as\b(?:{SEP}{WORD}){{0,6}}?{SEP}"
            rf"(?:dan|jailbroken|jailbreak|unrestricted|unfiltered|uncensored"
            rf"|(?:without|no){SEP}(?:any{SEP})?(?:restrictions|limits|limitations|filters|rules|guidelines))\b",
            "switch the agent into an unrestricted mode",
        ),
        phrase(
            "pretend",
            rf"pretend\s+(?:that\s+)?(?:you\s+are|you{_A}re|to\s+be)\s+(?:the\s+|a\s+|an\s+)?"
            rf"(?:system|developer|admin|administrator|root|operator|openai|anthropic|dan\b|jailbroken"
            rf"|unrestricted|(?:unrestricted|unfiltered|jailbroken|different|another)\s+(?:ai|assistant|model))",
            "give the agent a new identity",
        ),
        phrase(
            "enabl enter activat switch",
            r"(?:enable|enter|activate|switch\s+to)\s+(?:the\s+)?(?:dan|jailbreak|god|unrestricted)\s+mode\b",
            "switch the agent into an unrestricted mode",
        ),
        # German.
        phrase(
            "bist",
            rf"\b(?:du\s+bist\s+(?:jetzt|nun|ab\s+(?:sofort|jetzt)|von\s+nun\s+an)|ab\s+(?:sofort|jetzt)\s+bist\s+du)\s+"
            rf"(?:(?:ein|eine|der|die)\s+)?(?:(?:\w{{1,20}}\s+){{0,3}}?{_UNLIMITED}\b|(?:\w{{1,20}}\s+){{0,3}}?"
            rf"(?:ki|ai|assistent|chatbot|bot|modell)\b)",
            "give the agent a new identity",
            before=15,
        ),
        phrase(
            "tu verhalt spiel agier",
            rf"(?:tu\s+so,?\s+als\s+(?:ob\s+du|warst\s+du)|verhalte\s+dich\s+wie|spiele?\s+(?:die\s+rolle|eine\s+ki)"
            rf"|agiere\s+als)(?:\s+\w{{1,20}}){{0,4}}?\s+{_UNLIMITED}\b",
            "switch the agent into an unrestricted mode",
        ),
        # Spanish.
        phrase(
            "eres",
            rf"\b(?:(?:ahora|desde\s+ahora|a\s+partir\s+de\s+ahora),?\s+eres|eres\s+ahora)\s+(?:una?\s+|el\s+|la\s+)?"
            rf"(?:(?:\w{{1,20}}\s+){{0,3}}?{_UNLIMITED}\b|(?:\w{{1,20}}\s+){{0,3}}?(?:ia|ai|asistente|modelo|bot)\b)",
            "give the agent a new identity",
            before=30,
        ),
        phrase(
            "actua finge compor",
            rf"(?:actua\s+como|finge\s+(?:que\s+eres|ser)|comportate\s+como)(?:\s+\w{{1,20}}){{0,4}}?\s+{_UNLIMITED}\b",
            "switch the agent into an unrestricted mode",
        ),
        # French.
        phrase(
            "desormais maintenant present",
            rf"\b(?:tu\s+es\s+(?:maintenant|desormais|a\s+present)|(?:desormais|a\s+partir\s+de\s+maintenant),?\s+tu\s+es)"
            rf"\s+(?:une?\s+|le\s+|la\s+)?(?:(?:\w{{1,20}}\s+){{0,3}}?{_UNLIMITED}\b"
            rf"|(?:\w{{1,20}}\s+){{0,3}}?(?:ia|ai|assistant|modele|bot)\b)",
            "give the agent a new identity",
            before=30,
        ),
        phrase(
            "agis fais comport",
            rf"(?:agis\s+comme|fais\s+semblant\s+d'etre|comporte-toi\s+comme)(?:\s+\w{{1,20}}){{0,4}}?\s+{_UNLIMITED}\b",
            "switch the agent into an unrestricted mode",
        ),
        # Chinese.
        phrase(
            ("你现在是", "从现在开始", "从现在起", "扮演", "进入", "切换到", "假装你是"),
            r"(?:你现在是|从现在(?:开始|起)\s{0,2},?\s{0,2}你(?:是|扮演|将是|就是)|扮演|假装你是)\s{0,2}(?:一个|一名)?\s{0,2}"
            r"(?:dan|没有(?:任何)?(?:限制|规则|过滤|约束)的|不受(?:任何)?(?:限制|约束|规则)的|越狱|无限制的?|无审查的?)"
            r"|(?:进入|切换到|启用|开启)\s{0,2}(?:dan|越狱|上帝|无限制)\s{0,2}模式",
            "give the agent a new identity",
        ),  # fmt: skip
    )


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
        return _ADDRESSEE.search(body) is not None and _IMPERATIVE.search(body) is not None
