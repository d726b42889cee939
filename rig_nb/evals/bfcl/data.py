"""Reading BFCL v4's files: where they are, each JSON line, and what makes a case usable.

The data is `BFCL_v4_<category>.json` (JSON Lines: id, question, function) and
`possible_answer/BFCL_v4_<category>.json` (id, ground_truth), from a folder given or
from an installed `bfcl_eval` package, found with `importlib.util.find_spec` (which
locates the package without running it: bfcl_eval's modules import every model
handler). A line that is not a JSON object stops the load with the file and line
named; a case that cannot be judged (an unknown type, no answer, several turns) is
left out with a warning that names it.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from .checker import PYTHON_TYPES

__all__ = [
    "BFCL_VERSION",
    "Line",
    "answer_path",
    "answer_problem",
    "case_path",
    "data_folder",
    "function_problem",
    "question_problem",
    "read_lines",
]

# The release whose data and checker rig_nb follows.
BFCL_VERSION = "2026.3.23"
_INSTALL = f"pip install --no-deps bfcl-eval=={BFCL_VERSION}"

Line = tuple[int, dict[str, Any]]


def data_folder(data_dir: str | Path | None) -> Path:
    """The folder holding the BFCL_v4 files: `data_dir`, or the installed bfcl_eval's data."""
    if data_dir is not None:
        folder = Path(data_dir)
        if not folder.is_dir():
            raise FileNotFoundError(
                f"BFCL data folder {folder} does not exist (want a folder with "
                "BFCL_v4_<category>.json and possible_answer/)"
            )
        return folder
    spec = importlib.util.find_spec("bfcl_eval")
    places = list(spec.submodule_search_locations or ()) if spec is not None else []
    for place in places:
        folder = Path(place) / "data"
        if folder.is_dir():
            return folder
    raise FileNotFoundError(
        "no BFCL data: pass data_dir (a folder with BFCL_v4_<category>.json and "
        f"possible_answer/), or `{_INSTALL}` (its data alone; rig_nb does not import it)"
    )


def case_path(folder: Path, category: str) -> Path:
    return folder / f"BFCL_v4_{category}.json"


def answer_path(folder: Path, category: str) -> Path:
    return folder / "possible_answer" / f"BFCL_v4_{category}.json"


def read_lines(path: Path) -> Iterator[Line]:
    """Each non-blank line of a JSON Lines file as (line number, object); a line that is
    not a JSON object with a string "id" is a ValueError naming the file and line."""
    try:
        handle = path.open(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(f"BFCL data file {path} does not exist") from None
    with handle:
        for number, text in enumerate(handle, 1):
            if not text.strip():
                continue
            try:
                value = json.loads(text)
            except (ValueError, RecursionError) as exc:
                why = exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
                raise ValueError(
                    f"{path}:{number}: not a JSON object ({why}); the file is truncated or "
                    f"damaged: reinstall it ({_INSTALL})"
                ) from None
            if not isinstance(value, dict) or not isinstance(value.get("id"), str):
                raise ValueError(f'{path}:{number}: not a JSON object with a string "id"')
            yield number, value


def _schema_problem(schema: Any, where: str, top: bool) -> str | None:
    """Why a parameter's schema cannot be judged by BFCL's checker, or None."""
    if not isinstance(schema, Mapping):
        return f"{where} is not an object"
    kind = schema.get("type")
    if not isinstance(kind, str) or kind not in PYTHON_TYPES:
        return f"{where} has unknown type {kind!r} (known: {', '.join(PYTHON_TYPES)})"
    if kind in ("array", "tuple"):
        items = schema.get("items")
        if top and not isinstance(items, Mapping):
            return f"{where} is an {kind} with no items type"
        if isinstance(items, Mapping):
            found = _schema_problem(items, f"{where}.items", False)
            if found:
                return found
    properties = schema.get("properties")
    if properties is not None:
        if not isinstance(properties, Mapping):
            return f"{where}.properties is not an object"
        for name, inner in properties.items():
            found = _schema_problem(inner, f"{where}.{name}", False)
            if found:
                return found
    return None


def function_problem(function: Any) -> str | None:
    """Why a function doc cannot be offered and judged, or None."""
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        return "a function doc without a name"
    name = function["name"]
    parameters = function.get("parameters")
    if not isinstance(parameters, Mapping) or parameters.get("type") != "dict":
        return f"function {name!r}: parameters is not a BFCL dict"
    properties = parameters.get("properties")
    required = parameters.get("required")
    if not isinstance(properties, Mapping) or not isinstance(required, list):
        return f"function {name!r}: parameters want properties and required"
    if not isinstance(function.get("description", ""), str):
        return f"function {name!r}: description is not a string"
    for param, schema in properties.items():
        found = _schema_problem(schema, f"function {name!r} parameter {param!r}", True)
        if found:
            return found
    return None


def answer_problem(answer: Any, names: set[str], needs_name: bool) -> str | None:
    """Why a ground_truth list cannot be judged, or None (names: the function docs')."""
    if not isinstance(answer, list) or not answer:
        return "no possible answer"
    for entry in answer:
        if not isinstance(entry, Mapping) or len(entry) != 1:
            return "a possible answer that is not one {function: arguments} object"
        name, params = next(iter(entry.items()))
        if needs_name and name not in names:
            return f"possible answer for {name!r}, which no function doc names"
        if not isinstance(params, Mapping) or not all(isinstance(v, list) for v in params.values()):
            return f"possible answer for {name!r}: each parameter wants a list of values"
    return None


def question_problem(question: Any) -> str | None:
    """Why a case's question is not one turn of role/content messages, or None."""
    if not isinstance(question, list) or not question:
        return "no question"
    if len(question) != 1:
        return f"{len(question)} turns (only single-turn cases are judged)"
    turn = question[0]
    if not isinstance(turn, list) or not turn:
        return "an empty first turn"
    for message in turn:
        if (
            not isinstance(message, Mapping)
            or message.get("role") not in ("system", "user", "assistant")
            or not isinstance(message.get("content"), str)
        ):
            return "a message that is not a system, user or assistant text"
    return None
