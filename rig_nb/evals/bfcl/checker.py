"""BFCL's Python AST checker, reimplemented: the verdict bfcl-eval 2026.3.23 gives a call list.

The reference is `bfcl_eval/eval_checker/ast_eval/ast_checker.py` with the FC path of
`eval_runner.py` in front of it (`decode_ast` of an OpenAI-style handler: each call's
arguments through `json.loads`; irrelevance judged by whether that decoding
succeeds). Every rule, error type string and order of checks is theirs, including the
quirks (a type check that falls through, `""` in a list answer standing for `[]`, the
last failure of a dict check winning). A function name is compared with its dots
as underscores: the names BFCL sends to OpenAI-style endpoints.

What differs is only the cost: each case's answers are standardized once, when first
checked, not on every call, and every value's repr in a reason is bounded. Each check
is linear in the size of the calls; a value nested too deep for `json.loads` fails to
decode, as in BFCL. Where BFCL's checker itself raises (a list-of-dict answer whose
first possible value is `""` given a list of non-dicts, an int too large for a float),
this answers the nearest error type instead: `type_error:nested`, `type_error:simple`.
"""

from __future__ import annotations

import json
import json.scanner
import reprlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

__all__ = ["PYTHON_TYPES", "CaseChecker", "Miss", "explain", "standardize"]

# BFCL's PYTHON_TYPE_MAPPING: the types its checker knows ("any" is checked as a string).
PYTHON_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "float": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
    "any": str,
}
_NESTED = ("array", "tuple")
# BFCL's standardize_string removes these before lowercasing.
_DROP = str.maketrans("", "", " ,./-_*^")
# (error type, (reason template, values)); None is a pass. The reason is formatted only
# when asked for (`explain`): `check` needs the type alone, and a bounded repr costs more
# than the check.
Miss = tuple[str, tuple[Any, ...]]

_short = reprlib.Repr()
_short.maxstring = 60
_short.maxother = 60
_short.maxlist = _short.maxdict = _short.maxtuple = 6
_short.maxlevel = 3


_NOT_ONE_OF = "{}: {} is not one of {}"
_COUNT = "{} calls, expected {}"


def explain(miss: Miss) -> str:
    """A miss's short reason, every value's repr bounded."""
    template, *values = miss[1]
    return str(template).format(*(_short.repr(v) for v in values))


def standardize(text: str) -> str:
    """BFCL's standardize_string: spaces and `,./-_*^` removed, lowercased, ' as "."""
    return text.translate(_DROP).lower().replace("'", '"')


def _std(value: Any) -> Any:
    return standardize(value) if type(value) is str else value


def _first_type(values: Sequence[Any]) -> type | None:
    """BFCL's get_possible_answer_type: the type of the first value that is not ""."""
    for value in values:
        if value != "":
            return type(value)
    return None


@dataclass(frozen=True)
class _DictAnswer:
    """One possible dict value: its keys, each key's values standardized, the str ones apart."""

    keys: Mapping[str, Sequence[Any]]
    std: Mapping[str, list[Any]]
    strs: Mapping[str, frozenset[str]]

    @classmethod
    def of(cls, answer: Mapping[str, Any]) -> _DictAnswer:
        std: dict[str, list[Any]] = {}
        strs: dict[str, frozenset[str]] = {}
        for key, values in answer.items():
            listed = list(values) if isinstance(values, (list, tuple, str)) else []
            std[key] = [_std(v) for v in listed]
            strs[key] = frozenset(v for v in std[key] if type(v) is str)
        return cls(answer, std, strs)

    def miss(self, value: Mapping[str, Any]) -> str | None:
        """BFCL's dict_checker for this one possible value: None, or the error type (a
        missing key found after a wrong value wins, as there)."""
        error = None
        for key, item in value.items():
            if key not in self.keys:
                error = "value_error:dict_key"
                break
            std = _std(item)
            if type(std) is str:
                if std not in self.strs[key]:
                    error = "value_error:dict_value"
                    break
            elif std not in self.std[key]:
                error = "value_error:dict_value"
                break
        for key, values in self.keys.items():
            if key not in value and "" not in values:
                error = "value_error:dict_key"
                break
        return error


def _dict_miss(value: Any, answers: Sequence[_DictAnswer | None]) -> str | None:
    """BFCL's dict_checker over possible values (None for a "" one): None when one fits."""
    error = "dict_checker:unclear"
    for answer in answers:
        if answer is None:
            continue
        if not isinstance(value, dict):
            return "type_error:nested"  # BFCL raises here (list_dict_checker after a "")
        found = answer.miss(value)
        if found is None:
            return None
        error = found
    return error


class _Param:
    """One parameter of one expected call: its declared type and possible values, with what
    its value check needs prepared once (standardized strings, lists or dicts)."""

    __slots__ = (
        "answer_type",
        "declared",
        "dicts",
        "expected",
        "float",
        "items",
        "kind",
        "list_dicts",
        "lists",
        "nested",
        "strs",
        "values",
        "variable",
    )

    def __init__(self, declared: Mapping[str, Any], values: Sequence[Any]) -> None:
        self.declared = str(declared["type"])
        # Any, not type: `type(value) is self.expected` must not narrow value for mypy.
        self.expected: Any = PYTHON_TYPES[self.declared]
        self.nested: Any = None
        if self.declared in _NESTED:
            self.nested = PYTHON_TYPES[declared["items"]["type"]]
        self.float = self.declared == "float"
        self.values = list(values)
        self.answer_type: Any = _first_type(self.values)
        self.variable = self.answer_type is not None and self.answer_type is not self.expected
        # Per possible value: is it a list, and the type of its first element that is not "".
        self.items = (
            [(type(v) is list, _first_type(v) if type(v) is list else None) for v in values]
            if self.nested is not None
            else []
        )
        # How a value of the declared type is compared (BFCL's special cases, in its order).
        expected = self.expected
        if expected is dict:
            self.kind = "dict"
            self.dicts = [
                _DictAnswer.of(v) if isinstance(v, dict) else None for v in self.values if v != ""
            ]
        elif expected is list and self.nested is dict:
            self.kind = "list_dict"
            self.list_dicts = [
                [
                    _DictAnswer.of(d) if isinstance(d, dict) else None
                    for d in (v if isinstance(v, (list, str)) else ())
                ]
                for v in self.values
            ]
        elif expected is str:
            self.kind = "str"
            self.strs = frozenset(standardize(v) for v in self.values if type(v) is str)
        elif expected is list:
            self.kind = "list"
            # A "" among the values standardizes to [] (BFCL iterates it), a str to its chars.
            self.lists = [
                [_std(v) for v in candidate]
                for candidate in self.values
                if isinstance(candidate, (list, str))
            ]
        else:
            self.kind = "other"

    def _nested_ok(self, value: Any) -> bool:
        nested = self.nested
        for is_list, first in self.items:
            if not is_list:
                return True  # a possible value that is not a list (""): BFCL's flag stays True
            if all(type(v) is nested or (first is not None and type(v) is first) for v in value):
                return True
        return False

    def miss(self, name: str, value: Any) -> Miss | None:
        """BFCL's type_checker and value checks for one argument of the model's."""
        if self.float and type(value) is int:
            try:
                value = float(value)
            except OverflowError:  # BFCL raises here
                return "type_error:simple", ("{}: an int too large for a float", name)
        variable = self.variable
        kind = type(value)
        if kind is self.expected and (self.nested is None or self._nested_ok(value)):
            pass
        elif self.answer_type is not None and kind is self.answer_type:
            if kind is self.expected:
                # The nested check failed, and BFCL's fall-through keeps its error type.
                return "type_error:nested", (
                    "{}: an item of {} is not of the declared type",
                    name,
                    value,
                )
            variable = True
        else:
            return "type_error:simple", ("{}: expected {}, got {}", name, self.declared, value)
        if not variable:
            check = self.kind
            if check == "str":
                if standardize(value) in self.strs:
                    return None
                return "value_error:string", (_NOT_ONE_OF, name, value, self.values)
            if check == "dict":
                error = _dict_miss(value, self.dicts)
                return None if error is None else (error, ("{}: {}", name, value))
            if check == "list_dict":
                error = self._list_dict_miss(value)
                return None if error is None else (error, ("{}: {}", name, value))
            if check == "list":
                if [_std(v) for v in value] in self.lists:
                    return None
                return "value_error:list/tuple", (_NOT_ONE_OF, name, value, self.values)
        if value not in self.values:
            return "value_error:others", (_NOT_ONE_OF, name, value, self.values)
        return None

    def _list_dict_miss(self, value: Any) -> str | None:
        error = "list_dict_checker:unclear"
        for candidate in self.list_dicts:
            if len(value) != len(candidate):
                error = "value_error:list_dict_count"
                continue
            for item, answer in zip(value, candidate, strict=True):
                found = _dict_miss(item, [answer])
                if found is not None:
                    error = found
                    break
            else:
                return None
        return error


class _Expected:
    """One expected call: BFCL's simple_function_checker against one function doc and answer."""

    __slots__ = ("name", "optional", "params", "required")

    def __init__(self, function: Mapping[str, Any], answer: Mapping[str, Any]) -> None:
        self.name = str(function["name"]).replace(".", "_")
        parameters = function["parameters"]
        details: Mapping[str, Any] = parameters["properties"]
        self.required = list(parameters["required"])
        values: Mapping[str, Sequence[Any]] = next(iter(answer.values()))
        self.params = {p: _Param(details[p], v) for p, v in values.items() if p in details}
        self.optional = [(p, "" in v) for p, v in values.items()]

    def miss(self, name: str, args: Mapping[str, Any]) -> Miss | None:
        if name != self.name:
            return "simple_function_checker:wrong_func_name", (
                "called {}, expected {}",
                name,
                self.name,
            )
        for param in self.required:
            if param not in args:
                return "simple_function_checker:missing_required", (
                    "missing required parameter {}",
                    param,
                )
        for param, value in args.items():
            spec = self.params.get(param)
            if spec is None:
                return "simple_function_checker:unexpected_param", (
                    "unexpected parameter {}",
                    param,
                )
            miss = spec.miss(param, value)
            if miss is not None:
                return miss
        for param, optional in self.optional:
            if not optional and param not in args:
                return "simple_function_checker:missing_optional", (
                    "parameter {} not given and not optional",
                    param,
                )
        return None


# json.loads' own scanner, called directly: json.loads' verdicts without its Python frames.
# (typeshed types the C scanner's constructor as taking itself.)
_scan = cast(Any, json.scanner.make_scanner)(json.JSONDecoder())
# What json.loads skips around a document: JSON's own whitespace, no other.
_JSON_SPACE = " \t\n\r"


def _loads(text: str) -> Any:
    """json.loads(text) for a str: the value, or ValueError / RecursionError."""
    start = 0 if text[:1] not in _JSON_SPACE else len(text) - len(text.lstrip(_JSON_SPACE))
    try:
        value, end = _scan(text, start)
    except StopIteration:
        raise ValueError("expecting a value") from None
    if end != len(text) and text[end:].strip(_JSON_SPACE):
        raise ValueError("extra data")
    return value


def _decode(calls: Sequence[tuple[str, Any]]) -> tuple[list[tuple[str, Any]], bool, bool]:
    """The calls with their arguments decoded as BFCL's FC handlers do (`json.loads`);
    whether every one decoded; whether every one is a JSON object. A mapping is taken as
    already decoded."""
    out: list[tuple[str, Any]] = []
    objects = True
    for name, arguments in calls:
        try:
            if type(arguments) is str:
                args = _loads(arguments)
            elif isinstance(arguments, Mapping):
                args = arguments if type(arguments) is dict else dict(arguments)
            else:
                args = json.loads(arguments)
        except (ValueError, RecursionError, TypeError):
            return out, False, False
        if type(args) is not dict:
            objects = False
        out.append((name, args))
    return out, True, objects


class CaseChecker:
    """BFCL's verdict on one case's calls: `miss(calls)` is None (correct) or a `Miss`."""

    def __init__(
        self,
        category: str,
        functions: Sequence[Mapping[str, Any]],
        answer: Sequence[Mapping[str, Any]],
    ) -> None:
        self.category = category
        self.irrelevance = "irrelevance" in category
        self.parallel = "parallel" in category
        self.multiple = not self.parallel and "multiple" in category
        if self.irrelevance:
            self.expected: list[_Expected] = []
        elif "parallel" in category or "multiple" in category:
            by_name: dict[str, Mapping[str, Any]] = {}
            for function in functions:
                by_name.setdefault(str(function["name"]), function)
            self.expected = [_Expected(by_name[next(iter(a))], a) for a in answer]
        else:
            self.expected = [_Expected(functions[0], answer[0])]

    def miss(self, calls: Sequence[tuple[str, Any]]) -> Miss | None:
        decoded, whole, formatted = _decode(calls)
        if self.irrelevance:
            # eval_runner: a call list that decodes to function-call format is a failure.
            if formatted and decoded:
                return "irrelevance_error:decoder_success", (
                    "{} call(s) made where none was wanted",
                    len(decoded),
                )
            return None
        if not whole:
            return "ast_decoder:decoder_failed", ("call {}: arguments are not JSON", len(decoded))
        if not formatted:
            return "ast_decoder:decoder_wrong_output_format", ("arguments are not a JSON object",)
        if self.parallel:
            return self._parallel(decoded)
        if self.multiple:
            if len(decoded) != len(self.expected):
                return "multiple_function_checker:wrong_count", (
                    _COUNT,
                    len(decoded),
                    len(self.expected),
                )
            return self.expected[0].miss(*decoded[0])
        if len(decoded) != 1:
            return "simple_function_checker:wrong_count", (_COUNT, len(decoded), 1)
        return self.expected[0].miss(*decoded[0])

    def _parallel(self, decoded: list[tuple[str, Any]]) -> Miss | None:
        if len(decoded) != len(self.expected):
            return "parallel_function_checker_no_order:wrong_count", (
                _COUNT,
                len(decoded),
                len(self.expected),
            )
        left = list(range(len(decoded)))
        for n, expected in enumerate(self.expected):
            last: Miss | None = None
            for index in left:
                last = expected.miss(*decoded[index])
                if last is None:
                    left.remove(index)
                    break
            if last is not None:
                return "parallel_function_checker_no_order:cannot_find_match", (
                    "no call matches possible answer {} (last miss: {})",
                    n,
                    last[0],
                )
        return None
