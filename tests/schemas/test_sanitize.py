"""rig_nb.schemas.sanitize and sanitize_tools: the base rules, each dialect's, the lines that
name each change, and outputs that stay valid JSON Schemas (checked with jsonschema)."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema
import pytest

from rig_nb import Tool
from rig_nb.schemas import sanitize, sanitize_tools
from rig_nb.servers import SERVERS as PROFILES

SERVERS = list(PROFILES)


def obj(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


HELD = [
    pytest.param(obj(city={"type": "string", "description": "a city"}), id="plain"),
    pytest.param(
        {**obj(n={"type": "integer", "enum": [1, 2]}), "required": ["n"]}, id="enum-required"
    ),
    pytest.param(obj(tags={"type": "array", "items": {"type": "string"}}), id="array"),
    pytest.param(obj(when={"type": "string", "format": "date-time"}), id="held-format"),
    pytest.param(obj(code={"type": "string", "pattern": "^[A-Z]{3}$"}), id="anchored-pattern"),
]

CORPUS: list[dict[str, Any]] = [
    {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:x",
        "type": "object",
        "properties": {
            "who": {"$ref": "#/$defs/Person"},
            "when": {"type": ["string", "null"], "format": "email", "maxLength": 9},
            "n": {"type": "number", "minimum": 0, "multipleOf": 2},
            "code": {"type": "string", "pattern": "[a-z]+", "minLength": 2},
            "pair": {
                "type": "array",
                "prefixItems": [{"type": "string"}],
                "items": {},
                "minItems": 1,
            },
            "obj": {"type": "object", "patternProperties": {"^x": {}}, "minProperties": 1},
        },
        "required": ["who"],
        "additionalProperties": False,
        "$defs": {
            "Person": {
                "type": "object",
                "$comment": "a person",
                "properties": {"name": {"type": "string"}, "boss": {"$ref": "#/$defs/Person"}},
                "required": ["name"],
            }
        },
    },
    {
        "type": "object",
        "definitions": {"A": {"type": "integer"}},
        "properties": {"a": {"$ref": "#/definitions/A"}},
    },
    {
        "type": "object",
        "properties": {"x": {"anyOf": [{"type": "string", "pattern": "a|b"}, {"type": "null"}]}},
    },
]


def _held_by(server: str, schema: dict[str, Any]) -> bool:
    """Ollama passes neither `format` nor `pattern` to the model: those schemas change there."""
    return server != "ollama" or not ("format" in str(schema) or "pattern" in str(schema))


@pytest.mark.parametrize(
    ("schema", "server"),
    [
        pytest.param(p.values[0], server, id=f"{p.id}-{server}")
        for p in HELD
        for server in SERVERS
        if _held_by(server, p.values[0])
    ],
)
def test_a_schema_the_dialect_holds_comes_back_equal_with_no_lines(
    schema: dict[str, Any], server: str
) -> None:
    out, lines = sanitize(schema, server=server)
    assert (out, lines) == (schema, [])
    assert out is not schema


@pytest.mark.parametrize("server", SERVERS)
@pytest.mark.parametrize("schema", CORPUS)
def test_outputs_are_valid_schemas_and_the_input_is_never_changed(
    schema: dict[str, Any], server: str
) -> None:
    before = copy.deepcopy(schema)
    out, lines = sanitize(schema, server=server)
    assert schema == before
    jsonschema.Draft202012Validator.check_schema(out)
    assert all(line.startswith("/") for line in lines)
    assert "$ref" not in str(out) and "$defs" not in str(out) and "$schema" not in str(out)


def test_the_base_rules_each_named_by_its_pointer() -> None:
    out, lines = sanitize(CORPUS[0])
    who = out["properties"]["who"]
    assert who["properties"]["boss"] == {"type": "object"}
    assert out["properties"]["when"] == {
        "anyOf": [{"type": "string", "format": "email", "maxLength": 9}, {"type": "null"}]
    }
    assert lines == [
        "/$schema: dropped",
        "/$id: dropped",
        "/properties/who/$ref: inlined #/$defs/Person",
        "/properties/who/$comment: dropped",
        "/properties/who/properties/boss/$ref: recursive $ref #/$defs/Person replaced by "
        '{"type": "object"}',
        '/properties/when/type: ["string", "null"] as anyOf',
        "/$defs: dropped; its definitions are inlined where used",
    ]


def test_refs_with_siblings_missing_targets_and_definitions_kept_when_unused() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"$ref": "#/$defs/A", "description": "the a"},
            "b": {"$ref": "#/$defs/A", "type": "string"},
            "c": {"$ref": "#/$defs/Nope", "description": "lost"},
        },
        "$defs": {"A": {"type": "integer"}},
    }
    out, lines = sanitize(schema)
    props = out["properties"]
    assert props["a"] == {"type": "integer", "description": "the a"}
    assert props["b"] == {"allOf": [{"type": "integer"}, {"type": "string"}]}
    assert props["c"] == {"description": "lost"}
    assert "/properties/c/$ref: $ref #/$defs/Nope points to nothing; dropped" in lines
    unused = {"type": "object", "$defs": {"A": {"type": "integer"}}}
    assert sanitize(unused) == (unused, [])


def test_a_definition_kept_beside_its_ref_is_found() -> None:
    # schemars puts $defs next to the $ref (Epistates/turbovault#51); llama.cpp hoists them.
    schema = obj(
        f={"type": "array", "items": {"$ref": "#/$defs/F"}, "$defs": {"F": {"type": "string"}}}
    )
    out, lines = sanitize(schema)
    assert out == obj(f={"type": "array", "items": {"type": "string"}})
    assert lines[0] == "/properties/f/items/$ref: inlined #/$defs/F (a definition not at the root)"


def test_keywords_in_data_and_property_names_are_not_keywords() -> None:
    schema = obj(
        **{"$schema": {"type": "string"}, "pattern": {"type": "string"}},
        mode={"enum": [{"$ref": "#/x", "type": ["a", "b"]}], "default": {"$comment": "kept"}},
    )
    assert sanitize(schema, server="llama.cpp") == (schema, [])


@pytest.mark.parametrize(
    ("schema", "line"),
    [
        pytest.param(
            obj(s={"type": "string", "format": "email"}),
            "/properties/s/format: dropped; llama.cpp holds format date, date-time, time, uuid, "
            "uuid1, uuid2, uuid3, uuid4, uuid5 only",
            id="format",
        ),
        pytest.param(
            obj(n={"type": "number", "maximum": 3}),
            "/properties/n/maximum: dropped; llama.cpp holds bounds on integers only",
            id="number-bound",
        ),
        pytest.param(
            obj(s={"type": "string", "pattern": "^a$", "maxLength": 3}),
            "/properties/s/maxLength: dropped; llama.cpp reads the pattern or format instead",
            id="length-beside-pattern",
        ),
        pytest.param(
            obj(t={"type": "array", "items": [{"type": "string"}], "maxItems": 1}),
            "/properties/t/maxItems: dropped; llama.cpp does not read it for a tuple",
            id="tuple-count",
        ),
        pytest.param(
            obj(t={"type": "array", "prefixItems": [{"type": "string"}], "items": {}}),
            "/properties/t/prefixItems: dropped; llama.cpp reads items instead",
            id="prefix-items",
        ),
        *[
            pytest.param(
                obj(x={k: v}), f"/properties/x/{k}: dropped; llama.cpp does not enforce it", id=k
            )
            for k, v in [
                ("uniqueItems", True),
                ("not", {"type": "null"}),
                ("minProperties", 1),
                ("patternProperties", {"a": {}}),
                ("if", {}),
                ("multipleOf", 2),
                ("contains", {}),
            ]
        ],
    ],
)
def test_llama_cpp_drops_what_it_does_not_enforce(schema: dict[str, Any], line: str) -> None:
    out, lines = sanitize(schema, server="llama.cpp")
    assert lines == [line]
    # `items` as a list is draft 7's tuple, the form llama.cpp reads; the rest is 2020-12.
    draft = jsonschema.Draft7Validator if "tuple" in line else jsonschema.Draft202012Validator
    draft.check_schema(out)


def test_llama_cpp_keeps_what_it_enforces() -> None:
    schema = obj(
        i={"type": "integer", "minimum": 1, "maximum": 9},
        s={"type": "string", "minLength": 1, "maxLength": 5},
        d={"type": "string", "format": "date"},
        a={"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
    )
    assert sanitize(schema, server="llama.cpp") == (schema, [])


@pytest.mark.parametrize(
    ("server", "spelled"),
    [
        # DESIGN.md's form for every engine that matches a pattern whole.
        ("llama.cpp", r"[\s\S]"),
        ("lm-studio", r"[\s\S]"),
        ("vllm", r"[\s\S]"),
        ("sglang", r"[\s\S]"),
    ],
)
def test_patterns_are_anchored_where_the_server_matches_the_whole_string(
    server: str, spelled: str
) -> None:
    out, lines = sanitize(obj(s={"type": "string", "pattern": "ab+"}), server=server)
    want = f"^{spelled}*(?:ab+){spelled}*$"
    assert out["properties"]["s"]["pattern"] == want
    assert lines == [f"/properties/s/pattern: anchored as {json.dumps(want)}"]


@pytest.mark.parametrize("server", ["unknown", "openai", "litellm"])
def test_other_servers_leave_patterns(server: str) -> None:
    schema = obj(s={"type": "string", "pattern": "ab+"})
    assert sanitize(schema, server=server) == (schema, [])


def test_ollama_keeps_what_reaches_the_models_template() -> None:
    schema = {
        "type": "object",
        "description": "the tool's arguments",
        "additionalProperties": False,
        "properties": {
            "place": {
                "type": "object",
                "properties": {"city": {"type": "string", "pattern": "^[A-Z]", "title": "City"}},
                "required": ["city"],
            },
            "tags": {"type": "array", "items": {"type": "string", "pattern": "^#"}},
        },
        "required": ["place"],
    }
    out, lines = sanitize(schema, server="ollama")
    assert out == {
        "type": "object",
        "properties": {
            "place": {"type": "object", "properties": {"city": {"type": "string"}}},
            "tags": {"type": "array", "items": {"type": "string", "pattern": "^#"}},
        },
        "required": ["place"],
    }
    said = "dropped; ollama does not pass it to the model"
    assert lines == [
        f"/description: {said}",
        f"/additionalProperties: {said}",
        f"/properties/place/required: {said}",
        f"/properties/place/properties/city/pattern: {said}",
        f"/properties/place/properties/city/title: {said}",
    ]


def test_an_unknown_server_kind_is_a_value_error_naming_the_kinds() -> None:
    with pytest.raises(ValueError, match="unknown server kind 'llamacpp': one of llama.cpp, vllm"):
        sanitize({}, server="llamacpp")


def _run(args: dict[str, Any]) -> str:
    return "ran"


def test_sanitize_tools_replaces_each_schema_and_names_each_tools_lines() -> None:
    clean = Tool("clean", "Clean.", obj(a={"type": "string"}), _run)
    typed = Tool("typed", "Typed.", obj(a={"type": ["string", "null"]}), _run)
    tools, changes = sanitize_tools([clean, typed], server="vllm")
    assert [t.name for t in tools] == ["clean", "typed"]
    assert tools[0].input_schema == clean.input_schema and tools[0].run is _run
    assert tools[1].input_schema["properties"]["a"] == {
        "anyOf": [{"type": "string"}, {"type": "null"}]
    }
    assert changes == {"clean": [], "typed": ['/properties/a/type: ["string", "null"] as anyOf']}
    assert typed.input_schema["properties"]["a"] == {"type": ["string", "null"]}
    with pytest.raises(ValueError, match="not a Tool"):
        sanitize_tools([{"name": "x"}])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="unknown server kind"):
        sanitize_tools([clean], server="nope")
