"""BfclCase: one BFCL case as rig_nb offers it (tools, a scenario) and judges it (`check`);
`load_bfcl` and `bfcl_scenarios`.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from ...scenarios import CallScenario
from ...tool import Tool
from .checker import CaseChecker, explain
from .data import (
    answer_path,
    answer_problem,
    case_path,
    data_folder,
    function_problem,
    question_problem,
    read_lines,
)

__all__ = ["BFCL_CATEGORIES", "BfclCase", "bfcl_scenarios", "load_bfcl", "tool_schema"]

# BFCL v4's single-turn categories with a Python AST check (the ones rig_nb judges).
BFCL_CATEGORIES: tuple[str, ...] = (
    "simple_python",
    "multiple",
    "parallel",
    "parallel_multiple",
    "irrelevance",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
    "live_irrelevance",
)
# BFCL's types as JSON Schema; "any" is left unconstrained.
_JSON_TYPES = {"dict": "object", "float": "number", "tuple": "array"}


def tool_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A BFCL parameter schema as JSON Schema: dict as object, float as number, tuple as
    array, any unconstrained; everything else kept."""
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type":
            if value != "any":
                out[key] = _JSON_TYPES.get(value, value)
        elif key == "properties" and isinstance(value, Mapping):
            out[key] = {
                name: tool_schema(inner) if isinstance(inner, Mapping) else inner
                for name, inner in value.items()
            }
        elif key == "items" and isinstance(value, Mapping):
            out[key] = tool_schema(value)
        else:
            out[key] = value
    return out


def _not_run(args: dict[str, Any]) -> str:
    raise RuntimeError("a BFCL tool is judged, never run")


def _check_categories(categories: Iterable[str] | str) -> list[str]:
    chosen = [categories] if isinstance(categories, str) else list(categories)
    for category in chosen:
        if category not in BFCL_CATEGORIES:
            raise ValueError(
                f"unknown BFCL category {category!r}: the single-turn categories judged here "
                f"are {', '.join(BFCL_CATEGORIES)}"
            )
    return list(dict.fromkeys(chosen))


@dataclass(frozen=True)
class BfclCase:
    """One BFCL case: its first turn's messages, function docs and possible answers."""

    id: str
    category: str
    question: list[dict[str, str]]
    functions: list[dict[str, Any]]
    answer: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        _check_categories([self.category])
        if not isinstance(self.functions, list):
            raise ValueError(f"case {self.id!r}: functions is not a list of function docs")
        for function in self.functions:
            problem = function_problem(function)
            if problem:
                raise ValueError(f"case {self.id!r}: {problem}")
        problem = question_problem([self.question])
        if problem:
            raise ValueError(f"case {self.id!r}: {problem}")
        if "irrelevance" not in self.category:
            names = {str(f["name"]) for f in self.functions}
            needs_name = "parallel" in self.category or "multiple" in self.category
            problem = answer_problem(self.answer, names, needs_name) or (
                None if self.functions else "no function doc"
            )
            if problem:
                raise ValueError(f"case {self.id!r}: {problem}")
        converted = [str(f["name"]).replace(".", "_") for f in self.functions]
        if len(set(converted)) != len(converted):
            raise ValueError(f"case {self.id!r}: two functions share a name once dots are _")

    @property
    def tools(self) -> tuple[Tool, ...]:
        """Each function doc as a Tool (a dot in a name as `_`, BFCL's types as JSON
        Schema's); calling one is an error: BFCL's calls are judged, not run."""
        made = self.__dict__.get("_tools")
        if made is None:
            made = self._make_tools()
            object.__setattr__(self, "_tools", made)  # made once; not a field
        return cast("tuple[Tool, ...]", made)

    def _make_tools(self) -> tuple[Tool, ...]:
        return tuple(
            Tool(
                name=str(f["name"]).replace(".", "_"),
                description=str(f.get("description", "")).strip() or str(f["name"]),
                input_schema=tool_schema({**f["parameters"], "type": "dict"}),
                run=_not_run,
            )
            for f in self.functions
        )

    @property
    def _checker(self) -> CaseChecker:
        made = self.__dict__.get("_prepared")
        if made is None:
            # The answers standardized once, when first judged (functools.cached_property
            # costs more than the preparation of a small case).
            made = CaseChecker(self.category, self.functions, self.answer)
            object.__setattr__(self, "_prepared", made)
        return cast(CaseChecker, made)

    def judge(self, calls: Sequence[tuple[str, Any]]) -> tuple[str, str] | None:
        """BFCL's verdict with a short reason: None when correct, else (error type, reason)."""
        miss = self._checker.miss(calls)
        return None if miss is None else (miss[0], explain(miss))

    def check(self, calls: Sequence[tuple[str, Any]]) -> tuple[bool, str]:
        """BFCL's AST check of the model's calls, `(name, arguments)` pairs as made (the
        arguments as the JSON text sent, or a dict): `(True, "")` where BFCL counts it
        correct, else `(False, <BFCL's error type>)`."""
        miss = self._checker.miss(calls)
        return (True, "") if miss is None else (False, miss[0])

    def scenario(self) -> CallScenario:
        """One request with the case's messages and tools, tool_choice auto, nothing run;
        the reply's calls are judged by `check` (compare's row outcome `ok` or `wrong_call`,
        or the reply's ending when it made no call the way BFCL reads one)."""
        return CallScenario(
            self.id,
            group=self.category,
            messages=tuple(dict(m) for m in self.question),
            tools=self.tools,
            tool_choice="auto",
            judge_calls=self._row_verdict,
        )

    def _row_verdict(self, calls: Sequence[tuple[str, Any]]) -> tuple[bool, str]:
        miss = self.judge(calls)
        return (True, "") if miss is None else (False, f"{miss[0]}: {miss[1]}")


def _skip(path: Path, line: int, case_id: str, why: str) -> None:
    warnings.warn(f"{path}:{line}: BFCL case {case_id!r} skipped: {why}", stacklevel=4)


def _answers(folder: Path, category: str, wanted: set[str]) -> dict[str, tuple[Any, int]]:
    """The ground truth of each wanted id, with its line; reading stops once all are found."""
    found: dict[str, tuple[Any, int]] = {}
    if not wanted:
        return found
    for number, entry in read_lines(answer_path(folder, category)):
        if entry["id"] in wanted:
            found[entry["id"]] = (entry.get("ground_truth"), number)
            if len(found) == len(wanted):
                break
    return found


def _category(folder: Path, category: str, limit: int | None) -> list[BfclCase]:
    path = case_path(folder, category)
    rows: list[tuple[int, dict[str, Any]]] = []
    if limit != 0:
        for number, entry in read_lines(path):
            rows.append((number, entry))
            if limit is not None and len(rows) >= limit:
                break
    irrelevance = "irrelevance" in category
    answers = {} if irrelevance else _answers(folder, category, {e["id"] for _, e in rows})
    cases: list[BfclCase] = []
    for number, entry in rows:
        case_id = entry["id"]
        if not irrelevance and case_id not in answers:
            _skip(path, number, case_id, f"no possible answer in {answer_path(folder, category)}")
            continue
        problem = question_problem(entry.get("question"))
        if problem:
            _skip(path, number, case_id, problem)
            continue
        try:
            cases.append(
                BfclCase(
                    case_id,
                    category,
                    question=entry["question"][0],
                    functions=entry.get("function"),  # type: ignore[arg-type]
                    answer=[] if irrelevance else answers[case_id][0],
                )
            )
        except (ValueError, TypeError) as exc:
            where = f" (answer line {answers[case_id][1]})" if case_id in answers else ""
            _skip(path, number, case_id, str(exc).removeprefix(f"case {case_id!r}: ") + where)
    return cases


def load_bfcl(
    categories: Iterable[str] | str = BFCL_CATEGORIES,
    *,
    data_dir: str | Path | None = None,
    limit: int | None = None,
) -> list[BfclCase]:
    """BFCL v4's cases of `categories` (the first `limit` of each), from `data_dir` or an
    installed bfcl_eval's data (`pip install --no-deps bfcl-eval==2026.3.23` brings the
    data alone). A line that is not JSON is a ValueError naming the file and line; a case
    that cannot be judged is left out with a warning naming it."""
    chosen = _check_categories(categories)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise ValueError("limit must be None or an int >= 0")
    folder = data_folder(data_dir)
    return [case for category in chosen for case in _category(folder, category, limit)]


def bfcl_scenarios(
    categories: Iterable[str] | str = BFCL_CATEGORIES,
    *,
    data_dir: str | Path | None = None,
    limit: int | None = None,
) -> list[CallScenario]:
    """`load_bfcl`'s cases as compare scenarios (`BfclCase.scenario`), grouped by category."""
    return [case.scenario() for case in load_bfcl(categories, data_dir=data_dir, limit=limit)]
