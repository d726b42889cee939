"""The two passes of sanitize, each with an explicit stack (no recursion, whatever the depth).

`scan` checks that the input is JSON (a cycle, a key that is not a string, NaN: a
ValueError naming the JSON pointer), counts its values and indexes its anchors and
definitions. `Walk` builds the copy: it reads the input and never writes it, visits each
value of the output once, and stops with a ValueError when inlining `$ref`s would grow
the output past a budget linear in the input's size.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from ..servers.base import SchemaDialect
from .patterns import anchored

__all__ = ["Pointer", "Walk", "scan"]

_PER_TYPE: dict[str, frozenset[str]] = {
    "string": frozenset(
        {"minLength", "maxLength", "pattern", "format", "contentEncoding", "contentMediaType"}
    ),
    "number": frozenset(
        {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
    ),
    "array": frozenset(
        {"items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems"}
        | {"contains", "minContains", "maxContains", "unevaluatedItems"}
    ),
    "object": frozenset(
        {"properties", "required", "additionalProperties", "patternProperties"}
        | {"propertyNames", "minProperties", "maxProperties", "dependentRequired"}
        | {"dependentSchemas", "dependencies", "unevaluatedProperties"}
    ),
}
_TYPED = frozenset().union(*_PER_TYPE.values())
_SUB = frozenset(
    {"additionalProperties", "additionalItems", "contains", "not", "if", "then", "else"}
    | {"propertyNames", "unevaluatedItems", "unevaluatedProperties", "contentSchema", "items"}
)
_SUB_LIST = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})
_SUB_MAP = frozenset({"properties", "patternProperties", "dependentSchemas", "dependencies"})
_DEFS = ("$defs", "definitions")
_DROP = ("$schema", "$id", "$comment")
_BOUNDS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
_ANNOTATIONS = frozenset({"description", "title", "default", "examples", "deprecated"})
_SCHEMA_KEYS = _SUB | _SUB_LIST | _SUB_MAP | frozenset(_DEFS)
_RECURSIVE = {"type": "object"}
_MISSING = object()
# Roles: the parameters object itself, a property's schema, anything else.
ROOT, PROPERTY, OTHER = 0, 1, 2
_SCHEMA, _DATA, _EXIT = 0, 1, 2
# A pointer longer than this is shown as its head, "...", and its last tokens.
_HEAD = 120


def _escape(token: str) -> str:
    if "~" in token or "/" in token:
        return token.replace("~", "~0").replace("/", "~1")
    return token


def _is_map(value: object) -> bool:
    # dict first: an ABC isinstance check costs ten times as much.
    return type(value) is dict or isinstance(value, Mapping)


def _is_list(value: object) -> bool:
    return type(value) is list or isinstance(value, tuple)


class Pointer:
    """A JSON pointer built one token at a time in O(1), shown whole or, when long, abbreviated."""

    __slots__ = ("parent", "token", "depth", "head", "head_depth")

    def __init__(self, parent: Pointer | None = None, token: str = "") -> None:
        self.parent, self.token = parent, token
        if parent is None:
            self.depth, self.head, self.head_depth = 0, "", 0
        else:
            self.depth = parent.depth + 1
            if parent.head_depth == parent.depth and len(parent.head) < _HEAD:
                self.head, self.head_depth = f"{parent.head}/{token}", self.depth
            else:
                self.head, self.head_depth = parent.head, parent.head_depth

    def child(self, token: object) -> Pointer:
        return Pointer(self, _escape(str(token)))

    def __str__(self) -> str:
        if self.head_depth == self.depth:
            return self.head
        tail: list[str] = []
        node: Pointer | None = self
        while node is not None and node.depth > self.head_depth and len(tail) < 3:
            tail.append(node.token)
            node = node.parent
        gap = "/..." if self.depth - self.head_depth > len(tail) else ""
        return f"{self.head}{gap}/{'/'.join(reversed(tail))} (depth {self.depth})"


def _shown(path: list[str]) -> str:
    pointer = Pointer()
    for token in path:
        pointer = pointer.child(token)
    return json.dumps(str(pointer))


def _kind(value: object) -> str:
    return "a list" if isinstance(value, (list, tuple)) else f"a {type(value).__name__}"


def scan(schema: object) -> tuple[int, dict[str, Any], dict[str, tuple[Any, int]]]:
    """Count the values of `schema`; its `$anchor`s; each definition's schema and container id.

    ValueError naming the JSON pointer for what is not JSON: a root that is not an
    object, a cycle, a key that is not a string, NaN or infinity, any other type.
    """
    if not isinstance(schema, Mapping):
        raise ValueError(f'a schema is a JSON object, not {_kind(schema)} (at JSON pointer "")')
    count = 0
    anchors: dict[str, Any] = {}
    definitions: dict[str, tuple[Any, int]] = {}
    open_ids: set[int] = set()
    done: set[int] = set()
    path: list[str] = []
    stack: list[tuple[bool, Any, str]] = [(True, schema, "")]
    while stack:
        enter, value, token = stack.pop()
        if not enter:
            open_ids.discard(id(value))
            done.add(id(value))
            path.pop()
            continue
        count += 1
        if id(value) in open_ids:
            raise ValueError(
                f"the schema contains itself (at JSON pointer {_shown(path[1:] + [token])})"
            )
        if id(value) in done:
            continue
        open_ids.add(id(value))
        path.append(token)
        stack.append((False, value, token))
        is_map = _is_map(value)
        pairs = value.items() if is_map else ((str(i), v) for i, v in enumerate(value))
        for key, item in pairs:
            if type(key) is not str:
                where = _shown(path[1:] + [str(key)])
                raise ValueError(f"a key that is not a string: {key!r} (at JSON pointer {where})")
            kind = type(item)
            if kind is str or kind is int or kind is bool or item is None:
                count += 1
                if is_map and key == "$anchor" and kind is str:
                    anchors.setdefault(item, value)
                continue
            if kind is dict or kind is list or _is_map(item) or isinstance(item, tuple):
                stack.append((True, item, key))
                if is_map and key in _DEFS and _is_map(item):
                    for name, sub in item.items():
                        definitions.setdefault(str(name), (sub, id(item)))
            elif kind is float or isinstance(item, (int, float, str)):
                if isinstance(item, float) and not math.isfinite(item):
                    raise ValueError(
                        f"{item} is not JSON (at JSON pointer {_shown(path[1:] + [key])})"
                    )
                count += 1
            else:
                raise ValueError(
                    f"{_kind(item)} is not JSON (at JSON pointer {_shown(path[1:] + [key])})"
                )
    return count, anchors, definitions


def _merge(target: Any, siblings: dict[str, Any]) -> Any:
    """A `$ref`'s target with the keywords beside the `$ref` (both apply)."""
    if not siblings:
        return target
    if isinstance(target, bool):
        return siblings if target else False
    if not isinstance(target, Mapping):
        return siblings
    if any(k in target and k not in _ANNOTATIONS for k in siblings):
        notes = {k: v for k, v in siblings.items() if k in _ANNOTATIONS}
        rest = {k: v for k, v in siblings.items() if k not in _ANNOTATIONS}
        return {**notes, "allOf": [target, rest]}
    return {**target, **siblings}


class Walk:
    """One sanitize: the copy of `root` in `dialect`, and a line for each change (`lines`)."""

    def __init__(self, root: Mapping[str, Any], dialect: SchemaDialect, name: str) -> None:
        self.root, self.dialect, self.name = root, dialect, name
        size, self.anchors, self.definitions = scan(root)
        # Inlining may repeat a definition; past this the output is not linear in the input.
        self.budget = 32 * size + 100_000
        self.count = 0
        self.lines: list[str] = []
        self.active: dict[str, int] = {"#": 1}
        self.used: set[int] = set()
        self.deferred: list[tuple[Any, Pointer, dict[str, Any], str]] = []
        self.stack: list[tuple[Any, ...]] = []
        # The keywords `_dropped` may drop in this dialect outside a screened role.
        self.droppable = frozenset(_DROP) | dialect.unenforced
        if dialect.formats is not None:
            self.droppable |= {"format"}
        if dialect.integer_bounds_only:
            self.droppable |= _BOUNDS
        if dialect.lengths_beside_pattern_ignored:
            self.droppable |= {"minLength", "maxLength"}
        if dialect.tuple_rules:
            self.droppable |= {"minItems", "maxItems", "prefixItems"}

    def run(self) -> dict[str, Any]:
        box: dict[str, Any] = {}
        self.stack.append((_SCHEMA, self.root, Pointer(), ROOT, box, "root"))
        self._drain()
        while self.deferred:
            value, pointer, out, key = self.deferred.pop(0)
            if id(value) in self.used:
                del out[key]
                self.lines.append(f"{pointer}: dropped; its definitions are inlined where used")
                continue
            self._map(value, pointer, OTHER, out, key)
            self._drain()
        result: dict[str, Any] = box["root"]
        return result

    def _drain(self) -> None:
        stack = self.stack
        while stack:
            task = stack.pop()
            if task[0] == _EXIT:
                self.active[task[1]] -= 1
                continue
            self.count += 1
            if self.count > self.budget:
                where = json.dumps(str(task[2])) if task[0] == _SCHEMA else "its $refs"
                raise ValueError(
                    f"inlining $refs grows the schema past {self.budget} values "
                    f"(at JSON pointer {where})"
                )
            if task[0] == _SCHEMA:
                self._schema(*task[1:])
            else:
                self._data(*task[1:])

    def _data(self, value: Any, out: Any, key: Any) -> None:
        if _is_map(value):
            copy: dict[str, Any] = {}
            out[key] = copy
            for k, v in value.items():
                copy[k] = v
                if type(v) is dict or type(v) is list or _is_map(v) or isinstance(v, tuple):
                    self.stack.append((_DATA, v, copy, k))
        elif _is_list(value):
            items: list[Any] = list(value)
            out[key] = items
            for i, v in enumerate(items):
                if type(v) is dict or type(v) is list or _is_map(v) or isinstance(v, tuple):
                    self.stack.append((_DATA, v, items, i))
        else:
            out[key] = value

    def _resolve(self, ref: str) -> tuple[Any, str]:
        """The value `ref` points to in the root, and where it was found when not there."""
        fragment = unquote(ref[1:])
        if not fragment.startswith("/"):
            return self.anchors.get(fragment, _MISSING), ""
        tokens = [t.replace("~1", "/").replace("~0", "~") for t in fragment[1:].split("/")]
        node: Any = self.root
        for token in tokens:
            if _is_map(node) and token in node:
                node = node[token]
            elif _is_list(node) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            else:
                node = _MISSING
                break
        if node is not _MISSING:
            if len(tokens) >= 2 and tokens[0] in _DEFS:
                self.used.add(id(self.root[tokens[0]]))
            return node, ""
        if len(tokens) == 2 and tokens[0] in _DEFS and tokens[1] in self.definitions:
            # A definition kept beside the $ref instead of at the root (llama.cpp hoists those).
            target, container = self.definitions[tokens[1]]
            self.used.add(container)
            return target, " (a definition not at the root)"
        return _MISSING, ""

    def _schema(self, src: Any, pointer: Pointer, role: int, out: Any, key: Any) -> None:
        if not _is_map(src):
            self._data(src, out, key)  # a boolean schema, or not a schema: kept as it is
            return
        node: Any = src
        ref = node.get("$ref")
        while isinstance(ref, str) and ref.startswith("#"):
            at = pointer.child("$ref")
            if self.active.get(ref):
                self.lines.append(f'{at}: recursive $ref {ref} replaced by {{"type": "object"}}')
                out[key] = dict(_RECURSIVE)
                return
            target, note = self._resolve(ref)
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            if target is _MISSING:
                self.lines.append(f"{at}: $ref {ref} points to nothing; dropped")
                node = siblings
                break
            self.lines.append(f"{at}: inlined {ref}{note}")
            self.active[ref] = self.active.get(ref, 0) + 1
            self.stack.append((_EXIT, ref))
            node = _merge(target, siblings)
            if not _is_map(node):
                self._data(node, out, key)
                return
            ref = node.get("$ref")
        if isinstance(node.get("type"), (list, tuple)):
            node = self._split_types(node, pointer)
        result: dict[str, Any] = {}
        out[key] = result
        tasks: list[tuple[Any, ...]] = []
        d = self.dialect
        screen = role == ROOT and d.root_keys is not None
        screen = screen or (role == PROPERTY and d.property_keys is not None)
        for k, v in node.items():
            if (screen or k in self.droppable) and self._dropped(node, k, v, pointer, role):
                continue
            if k == "pattern" and d.anchor is not None and type(v) is str:
                fixed = anchored(v, d.anchor)
                if fixed is not None:
                    result[k] = fixed
                    self.lines.append(f"{pointer.child(k)}: anchored as {json.dumps(fixed)}")
                    continue
            result[k] = v
            if k in _SCHEMA_KEYS:
                if k in _DEFS and _is_map(v):
                    self.deferred.append((v, pointer.child(k), result, k))
                elif k in _SUB_MAP and _is_map(v):
                    inner = PROPERTY if k == "properties" and role != OTHER else OTHER
                    tasks.append((_MAP, v, pointer.child(k), inner, result, k))
                elif k in _SUB_LIST and _is_list(v):
                    inner = PROPERTY if k == "anyOf" and role == PROPERTY else OTHER
                    items: list[Any] = [None] * len(v)
                    result[k] = items
                    at = pointer.child(k)
                    tasks.extend(
                        (_SCHEMA, s, at.child(i), inner, items, i) for i, s in enumerate(v)
                    )
                elif k in _SUB:
                    tasks.append((_SCHEMA, v, pointer.child(k), OTHER, result, k))
                else:
                    tasks.append((_DATA, v, result, k))
            elif type(v) is dict or type(v) is list or _is_map(v) or isinstance(v, tuple):
                tasks.append((_DATA, v, result, k))
        for task in reversed(tasks):
            if task[0] == _MAP:
                self._map(*task[1:])
            else:
                self.stack.append(task)

    def _map(
        self, value: Mapping[str, Any], pointer: Pointer, role: int, out: Any, key: Any
    ) -> None:
        """A map of name -> schema (properties, $defs, ...); a list (in `dependencies`) is data."""
        copy: dict[str, Any] = {}
        out[key] = copy
        tasks: list[tuple[Any, ...]] = []
        for name, sub in value.items():
            copy[name] = None
            if isinstance(sub, (list, tuple)):
                tasks.append((_DATA, sub, copy, name))
            else:
                tasks.append((_SCHEMA, sub, pointer.child(name), role, copy, name))
        self.stack.extend(reversed(tasks))

    def _split_types(self, node: Mapping[str, Any], pointer: Pointer) -> Mapping[str, Any]:
        """`"type": [A, B]` as `anyOf` of one branch per type, each with that type's keywords."""
        given = node["type"]
        kinds = list(dict.fromkeys(t for t in given if isinstance(t, str)))
        if not kinds or len(kinds) != len(given):
            return node
        at = pointer.child("type")
        if len(kinds) == 1:
            self.lines.append(f"{at}: {json.dumps(list(given))} as {json.dumps(kinds[0])}")
            return {**node, "type": kinds[0]}
        general = {k: v for k, v in node.items() if k != "type" and k not in _TYPED}
        branches = []
        for kind in kinds:
            branch: dict[str, Any] = {"type": kind}
            own = _PER_TYPE.get("number" if kind == "integer" else kind, frozenset())
            branch.update((k, v) for k, v in node.items() if k in own)
            branches.append(branch)
        if "anyOf" in general:
            before = general.get("allOf")
            general["allOf"] = [
                *(before if isinstance(before, list) else []),
                {"anyOf": general.pop("anyOf")},
            ]
        general["anyOf"] = branches
        self.lines.append(f"{at}: {json.dumps(list(given))} as anyOf")
        owned = frozenset().union(*(b.keys() for b in branches))
        for k in node:
            if k in _TYPED and k not in owned:
                self.lines.append(f"{pointer.child(k)}: dropped; it applies to no type listed")
        return general

    def _dropped(
        self, node: Mapping[str, Any], k: str, v: Any, pointer: Pointer, role: int
    ) -> bool:
        """Whether keyword `k` is dropped here (a line says why)."""
        d = self.dialect
        why = ""
        if k in _DROP:
            why = "dropped"
        elif role == ROOT and d.root_keys is not None and k not in d.root_keys:
            why = f"dropped; {self.name} does not pass it to the model"
        elif role == PROPERTY and d.property_keys is not None and k not in d.property_keys:
            why = f"dropped; {self.name} does not pass it to the model"
        elif k in d.unenforced:
            why = f"dropped; {self.name} does not enforce it"
        elif k == "format" and d.formats is not None and v not in d.formats:
            why = f"dropped; {self.name} holds format {', '.join(sorted(d.formats))} only"
        elif d.integer_bounds_only and k in _BOUNDS and node.get("type") != "integer":
            why = f"dropped; {self.name} holds bounds on integers only"
        elif (
            d.lengths_beside_pattern_ignored
            and k in ("minLength", "maxLength")
            and ("pattern" in node or (d.formats is not None and node.get("format") in d.formats))
        ):
            why = f"dropped; {self.name} reads the pattern or format instead"
        elif d.tuple_rules and k in ("minItems", "maxItems"):
            items = node.get("items", node.get("prefixItems"))
            if isinstance(items, (list, tuple)):
                why = f"dropped; {self.name} does not read it for a tuple"
        elif d.tuple_rules and k == "prefixItems" and "items" in node:
            why = f"dropped; {self.name} reads items instead"
        if why:
            self.lines.append(f"{pointer.child(k)}: {why}")
        return bool(why)


_MAP = 3
