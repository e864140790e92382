"""The memory tools an agent's model calls, defined once.

`TOOLS` is the one source of truth: the MCP server lists exactly these
(name, description, input schema) and validates arguments against them, and
`GET /api/v1/memory/tool-schemas` renders them for the OpenAI and Anthropic
function-calling formats. Semantics are the REST API's (API.md, v1.1).

`?strict=true` renders them for the providers' strict modes (OpenAI
structured outputs, Anthropic strict tool use), derived from the same
definitions by `strict_parameters`: every property required, the optional
ones nullable, and only the keywords both providers' published subsets
accept. The bounds a strict schema cannot state (lengths, ranges)
are still checked here, by `check_arguments` against the full schema, and a
null for an optional argument means it was left out (`absent_nulls`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jsonschema

from memoryhub import errors
from memoryhub.models import FileKind

FORMATS = ("openai", "anthropic", "mcp")


@dataclass(frozen=True)
class ToolDefinition:
    name: str
    description: str
    parameters: dict[str, Any]

    def as_openai(self) -> dict[str, object]:
        return {"type": "function",
                "function": {"name": self.name, "description": self.description, "parameters": self.parameters}}

    def as_anthropic(self) -> dict[str, object]:
        return {"name": self.name, "description": self.description, "input_schema": self.parameters}

    def as_mcp(self) -> dict[str, object]:
        return {"name": self.name, "description": self.description, "inputSchema": self.parameters}


_FILE_DESCRIPTION = ("The memory file. USER.md (what you know about this user) and MEMORY.md (long-term notes) "
                   "belong to one user and need `user`; SOUL.md, ABOUT.md and TOOLS.md are yours and refuse it.")
_FILE = {"type": "string", "enum": list(FileKind.values), "description": _FILE_DESCRIPTION}
_USER = {
    "type": "string",
    "minLength": 1,
    "maxLength": 255,
    "description": "The end user's id (required for USER.md and MEMORY.md; omit it for the agent's own files).",
}
_REASON = {
    "type": "string",
    "maxLength": 1000,
    "description": "Why you make this change, in one sentence (kept in the file's history for reviewers).",
}
NOTE_MAX = 2000  # services.notes: a note is a summary, not a transcript
NOTES_FILE = "notes"  # memory_view's pseudo-file: the pair's recent notes
_VIEW_FILE = {
    "type": "string",
    "enum": [*FileKind.values, NOTES_FILE],
    "description": _FILE_DESCRIPTION + f" `{NOTES_FILE}` (needs `user`) reads your notes of the last two days "
                   "with this user (memory_note); they are never part of your context.",
}
_OLD_TEXT = {
    "type": "string",
    "minLength": 1,
    "description": "A piece of the entry to change, quoted exactly as the file holds it; it must occur in exactly "
                   "one entry.",
}
_ENTRY = ("An entry is one markdown list item, heading or paragraph. ")
_WRITE_OUTCOME = ("If your writes go to review, the answer names a proposal and nothing changes in what is served "
                  "until a person approves it.")


def _object(properties: dict[str, object], required: list[str]) -> dict[str, object]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


TOOLS: tuple[ToolDefinition, ...] = (
    ToolDefinition(
        name="memory_view",
        description="Read one memory file as it is served now: its entries, version and how full it is. "
                    "Load USER.md and MEMORY.md when the conversation needs what you know about the user.",
        parameters=_object({"file": _VIEW_FILE, "user": _USER}, ["file"]),
    ),
    ToolDefinition(
        name="memory_search",
        description="Search your memory files and, with `user`, that user's files and past conversation logs. "
                    "Search before acting on a user's request, to use what you already know. Finds the words "
                    "as written or in other forms, ids and numbers exactly (A-99812, 42.90, v2.14.3), "
                    "misspellings, other languages, and entries that say the same in other words. Each "
                    "result is one entry: a file's line (`file`, `line`, `text`) or a log entry (`entry`), "
                    "with a snippet where the matched words are marked **like this**.",
        parameters=_object(
            {
                "query": {"type": "string", "minLength": 1, "maxLength": 200,
                          "description": "Words to look for, e.g. \"preferred contact channel\"."},
                "user": _USER,
                "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10,
                          "description": "At most this many results (default 10)."},
            },
            ["query"],
        ),
    ),
    ToolDefinition(
        name="memory_add",
        description="Add one entry at the end of a memory file. " + _ENTRY
                    + "Adding an entry that is already there changes nothing. " + _WRITE_OUTCOME,
        parameters=_object(
            {
                "file": _FILE,
                "text": {"type": "string", "minLength": 1,
                         "description": "The new entry, e.g. \"Prefers email over phone calls.\" (one entry; "
                                        "a bare sentence in a list becomes a list item)."},
                "user": _USER,
                "reason": _REASON,
            },
            ["file", "text"],
        ),
    ),
    ToolDefinition(
        name="memory_replace",
        description="Replace the one entry that contains `old_text` with `new_text` (the whole entry is "
                    "replaced; a list item keeps its bullet). " + _ENTRY + "Fails if no entry or several "
                    "different entries contain `old_text`. " + _WRITE_OUTCOME,
        parameters=_object(
            {
                "file": _FILE,
                "old_text": _OLD_TEXT,
                "new_text": {"type": "string", "minLength": 1, "description": "The complete new entry."},
                "user": _USER,
                "reason": _REASON,
            },
            ["file", "old_text", "new_text"],
        ),
    ),
    ToolDefinition(
        name="memory_remove",
        description="Remove the one entry that contains `old_text`, e.g. a fact that is no longer true. "
                    + _ENTRY + "Fails if no entry or several different entries contain `old_text`. "
                    + _WRITE_OUTCOME,
        parameters=_object({"file": _FILE, "old_text": _OLD_TEXT, "user": _USER, "reason": _REASON},
                           ["file", "old_text"]),
    ),
    ToolDefinition(
        name="memory_note",
        description="Save a short note for yourself in this conversation's log: what you learned, decided or "
                    "promised, in your own words. Use it before your conversation history is compacted and before "
                    "the session ends, so nothing important is lost. Notes are not memory files: consolidation "
                    "reads them as your own summary and proposes what to keep; memory_view with file "
                    f"`{NOTES_FILE}` reads the last two days' notes.",
        parameters=_object(
            {
                "text": {"type": "string", "minLength": 1,
                         "description": f"The note, at most {NOTE_MAX:,} characters, e.g. \"Agreed to call back "
                                        "on Friday about the refund.\""},
                "user": {**_USER, "description": "The end user this conversation is with."},
                "session": {"type": "integer", "minimum": 1,
                            "description": "The session to log to (default: the most recent open session with "
                                           "this user)."},
            },
            ["text", "user"],
        ),
    ),
)
BY_NAME = {tool.name: tool for tool in TOOLS}


# The keywords a strict schema keeps: the part of JSON Schema that both
# OpenAI's structured outputs and Anthropic's strict tool use accept (OpenAI
# refuses minLength/maxLength/default there, Anthropic every numeric and
# string-length bound). Everything else is dropped, not translated.
STRICT_KEYWORDS = frozenset({"type", "description", "enum", "const", "properties", "required",
                             "additionalProperties", "items", "anyOf"})
STRICT_FORMATS = ("openai", "anthropic")
_NULL_NOTE = " Null when you do not need it."


def _strict_property(schema: dict[str, Any], *, optional: bool, fmt: str) -> dict[str, object]:
    kept = {key: value for key, value in schema.items() if key in STRICT_KEYWORDS}
    if not optional:
        return kept
    description = kept.pop("description", "") + _NULL_NOTE
    if fmt == "anthropic":
        # Anthropic's grammar takes a nullable value as an anyOf with a null
        # branch, not a type list (the anthropic SDK's transform_schema
        # leaves this form as it is).
        return {"anyOf": [kept, {"type": "null"}], "description": description}
    kept["type"] = [kept["type"], "null"]
    if "enum" in kept:
        kept["enum"] = [*kept["enum"], None]
    return {**kept, "description": description}


def strict_parameters(parameters: dict[str, Any], fmt: str = "openai") -> dict[str, object]:
    """A tool's input schema for a provider's strict mode: closed, every
    property required, the optional ones nullable (`["string", "null"]` for
    openai, `anyOf` with a null branch for anthropic)."""
    if fmt not in STRICT_FORMATS:
        raise errors.Invalid("strict applies to the openai and anthropic formats; MCP has no strict mode.",
                             field="strict")
    required = set(parameters["required"])
    properties = {name: _strict_property(schema, optional=name not in required, fmt=fmt)
                  for name, schema in parameters["properties"].items()}
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def render_strict(fmt: str) -> list[dict[str, object]]:
    if fmt == "openai":
        return [{"type": "function", "function": {"name": tool.name, "description": tool.description,
                                                  "parameters": strict_parameters(tool.parameters, fmt),
                                                  "strict": True}}
                for tool in TOOLS]
    if fmt == "anthropic":
        return [{"name": tool.name, "description": tool.description,
                 "input_schema": strict_parameters(tool.parameters, fmt), "strict": True} for tool in TOOLS]
    if fmt == "mcp":
        raise errors.Invalid("strict applies to the openai and anthropic formats; MCP has no strict mode.",
                             field="strict")
    return render(fmt)  # the unknown format's 400


def render(fmt: str, *, strict: bool = False) -> list[dict[str, object]]:
    """The tools in one function-calling format: openai, anthropic or mcp
    (with `strict`, for the providers' strict modes)."""
    if strict:
        return render_strict(fmt)
    if fmt == "openai":
        return [tool.as_openai() for tool in TOOLS]
    if fmt == "anthropic":
        return [tool.as_anthropic() for tool in TOOLS]
    if fmt == "mcp":
        return [tool.as_mcp() for tool in TOOLS]
    raise errors.Invalid(f"format must be one of {', '.join(FORMATS)}, not {fmt[:40]!r}.", field="format")


def _takes_null(schema: object) -> bool:
    kind = schema.get("type") if isinstance(schema, dict) else None
    return kind == "null" or (isinstance(kind, list) and "null" in kind)


def absent_nulls(parameters: dict[str, Any], arguments: dict[str, object]) -> dict[str, object]:
    """`null` for an optional argument means it was left out: models in
    strict mode must send every property and send `"user": null` for the
    ones they do not use. A required argument, or one whose schema takes
    null, keeps its null (and is checked as sent)."""
    required = set(parameters.get("required", []))
    properties = parameters.get("properties", {})
    # An unknown argument stays, null or not, to be refused by name.
    return {name: value for name, value in arguments.items()
            if value is not None or name in required or name not in properties or _takes_null(properties[name])}


_TYPE_WORDS = {"string": "a string", "integer": "a whole number", "object": "an object", "boolean": "true or false"}


def check_arguments(tool: ToolDefinition, arguments: object) -> dict[str, object]:
    """The arguments of one call, checked against the tool's schema, or
    Invalid with a sentence naming the argument and what is wrong with it."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise errors.Invalid(f"{tool.name} takes its arguments as an object.")
    arguments = absent_nulls(tool.parameters, arguments)
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(tool.parameters).iter_errors(arguments))
    if error is None:
        return arguments
    names = ", ".join(tool.parameters["properties"])
    field = ".".join(str(part) for part in error.absolute_path)
    schema = error.schema if isinstance(error.schema, dict) else {}
    if error.validator == "required":
        missing = [name for name in error.validator_value if name not in arguments]
        field = missing[0] if missing else ""
        raise errors.Invalid(f"{tool.name} needs `{field}` (it takes {names}).", field=field)
    if error.validator == "additionalProperties":
        extra = sorted(set(arguments) - set(tool.parameters["properties"]))
        raise errors.Invalid(f"{tool.name} has no argument {', '.join(f'`{e}`' for e in extra)}; it takes {names}.",
                             field=extra[0] if extra else "")
    if error.validator == "type":
        wanted = _TYPE_WORDS.get(str(error.validator_value), str(error.validator_value))
        raise errors.Invalid(f"`{field}` must be {wanted}.", field=field)
    if error.validator == "enum":
        raise errors.Invalid(f"`{field}` must be one of {', '.join(map(str, error.validator_value))}.", field=field)
    if error.validator == "minLength":
        raise errors.Invalid(f"`{field}` is empty.", field=field)
    if error.validator == "maxLength":
        raise errors.Invalid(f"`{field}` has at most {error.validator_value:,} characters.", field=field)
    if error.validator in ("minimum", "maximum"):
        raise errors.Invalid(f"`{field}` must be from {schema.get('minimum')} to {schema.get('maximum')}.",
                             field=field)
    raise errors.Invalid(f"`{field or tool.name}`: {error.message}", field=field)
