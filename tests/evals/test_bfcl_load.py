"""load_bfcl: BFCL v4's real data from a folder or from an installed bfcl_eval, the type
mapping to Tools, and bad input (a clear error naming file and line, or a warning naming
the case it skips; never a partial list in silence)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from bfcl_data import bfcl_site

from rig_nb.evals import BFCL_CATEGORIES, BfclCase, bfcl_scenarios, load_bfcl
from rig_nb.tool import validate_tools

# Cases per category in bfcl-eval 2026.3.23.
COUNTS = {
    "simple_python": 400,
    "multiple": 200,
    "parallel": 200,
    "parallel_multiple": 200,
    "irrelevance": 240,
    "live_simple": 258,
    "live_multiple": 1053,
    "live_parallel": 16,
    "live_parallel_multiple": 24,
    "live_irrelevance": 884,
}


def test_every_category_loads_whole(bfcl_dir: Path) -> None:
    assert tuple(COUNTS) == BFCL_CATEGORIES
    cases = load_bfcl(data_dir=bfcl_dir)
    got: dict[str, int] = {}
    for c in cases:
        got[c.category] = got.get(c.category, 0) + 1
    assert got == COUNTS
    first = cases[0]
    assert first.id == "simple_python_0" and first.question[0]["role"] == "user"
    assert first.answer[0]["calculate_triangle_area"]["base"] == [10]
    assert all(not c.answer for c in cases if "irrelevance" in c.category)
    assert all(c.answer for c in cases if "irrelevance" not in c.category)
    for c in cases:
        validate_tools(list(c.tools))


def test_limit_takes_the_first_cases_of_each_category(bfcl_dir: Path) -> None:
    cases = load_bfcl(["irrelevance", "live_parallel"], data_dir=bfcl_dir, limit=3)
    assert [c.id for c in cases] == [
        "irrelevance_0",
        "irrelevance_1",
        "irrelevance_2",
        "live_parallel_0-0-0",
        "live_parallel_1-0-1",
        "live_parallel_2-0-2",
    ]
    assert load_bfcl("simple_python", data_dir=bfcl_dir, limit=0) == []
    scenarios = bfcl_scenarios(["parallel"], data_dir=bfcl_dir, limit=2)
    assert [(s.name, s.group, s.kind) for s in scenarios] == [
        ("parallel_0", "parallel", "calls"),
        ("parallel_1", "parallel", "calls"),
    ]


def test_without_data_dir_the_installed_bfcl_eval_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    # The wheel installed --no-deps into a folder, as `pip install --target` leaves it.
    monkeypatch.syspath_prepend(str(bfcl_site()))
    cases = load_bfcl(["simple_python"], limit=2)
    assert [c.id for c in cases] == ["simple_python_0", "simple_python_1"]
    # Found, not imported: bfcl_eval's modules import every model handler.
    assert "bfcl_eval" not in sys.modules


def test_without_data_the_error_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every folder bfcl_eval could be found in, left out (the cache's, or a venv's own).
    kept = [p for p in sys.path if not (Path(p or ".") / "bfcl_eval").is_dir()]
    monkeypatch.setattr(sys, "path", kept)
    with pytest.raises(FileNotFoundError, match=r"pip install --no-deps bfcl-eval==2026\.3\.23"):
        load_bfcl(["simple_python"])


def test_a_missing_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="nowhere"):
        load_bfcl(data_dir=tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="BFCL_v4_parallel.json"):
        load_bfcl(["parallel"], data_dir=tmp_path)


@pytest.mark.parametrize(
    "categories",
    [["multi_turn_base"], ["simple_java"], ["simple_python", "web_search"], "memory"],
)
def test_a_category_that_is_not_single_turn_is_refused(categories: Any, bfcl_dir: Path) -> None:
    with pytest.raises(ValueError, match="simple_python, multiple, parallel") as err:
        load_bfcl(categories, data_dir=bfcl_dir)
    assert str(categories if isinstance(categories, str) else categories[-1]) in str(err.value)


def _copy(bfcl_dir: Path, tmp_path: Path, category: str, lines: int) -> tuple[Path, Path]:
    """The first `lines` lines of a category and of its answers, in a folder of their own."""
    (tmp_path / "possible_answer").mkdir(exist_ok=True)
    data = tmp_path / f"BFCL_v4_{category}.json"
    answers = tmp_path / "possible_answer" / data.name
    for source, target in (
        (bfcl_dir / data.name, data),
        (bfcl_dir / "possible_answer" / data.name, answers),
    ):
        if source.exists():
            target.write_text("".join(source.read_text().splitlines(True)[:lines]))
    return data, answers


def test_a_truncated_line_is_an_error_naming_file_and_line(bfcl_dir: Path, tmp_path: Path) -> None:
    data, _ = _copy(bfcl_dir, tmp_path, "simple_python", 5)
    text = data.read_text()
    data.write_text(text[: len(text) - 40])  # the last line cut mid-object
    with pytest.raises(ValueError, match=rf"{data.name}:5: not a JSON object"):
        load_bfcl(["simple_python"], data_dir=tmp_path)
    assert load_bfcl(["simple_python"], data_dir=tmp_path, limit=4)  # before the damage


def test_a_non_json_answer_line_is_an_error_naming_it(bfcl_dir: Path, tmp_path: Path) -> None:
    _, answers = _copy(bfcl_dir, tmp_path, "multiple", 3)
    lines = answers.read_text().splitlines(True)
    answers.write_text(lines[0] + "not json\n" + lines[2])
    with pytest.raises(ValueError, match=rf"possible_answer.{answers.name}:2: not a JSON object"):
        load_bfcl(["multiple"], data_dir=tmp_path)


def _rewrite(path: Path, edit: Any) -> None:
    entries = [json.loads(line) for line in path.read_text().splitlines()]
    edit(entries)
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        pytest.param(
            lambda es: es[1]["function"][0]["parameters"]["properties"]["number"].update(
                type="bigint"
            ),
            "unknown type 'bigint'",
            id="unknown-type",
        ),
        pytest.param(
            lambda es: es[1].update(question=es[1]["question"] * 2),
            "2 turns",
            id="several-turns",
        ),
        pytest.param(
            lambda es: es[1]["function"][0]["parameters"]["properties"]["number"].update(
                type="array"
            ),
            "is an array with no items type",
            id="array-without-items",
        ),
    ],
)
def test_a_case_that_cannot_be_judged_is_skipped_with_a_warning(
    edit: Any, why: str, bfcl_dir: Path, tmp_path: Path
) -> None:
    data, _ = _copy(bfcl_dir, tmp_path, "simple_python", 3)
    _rewrite(data, edit)
    with pytest.warns(
        UserWarning, match=rf"{data.name}:2: BFCL case 'simple_python_1' skipped"
    ) as w:
        cases = load_bfcl(["simple_python"], data_dir=tmp_path)
    assert [c.id for c in cases] == ["simple_python_0", "simple_python_2"]
    assert why in str(w[0].message)


def test_a_case_without_answers_is_skipped_with_a_warning(bfcl_dir: Path, tmp_path: Path) -> None:
    _, answers = _copy(bfcl_dir, tmp_path, "parallel", 3)
    _rewrite(answers, lambda es: es.pop(1))
    with pytest.warns(UserWarning, match="'parallel_1' skipped: no possible answer in"):
        cases = load_bfcl(["parallel"], data_dir=tmp_path)
    assert [c.id for c in cases] == ["parallel_0", "parallel_2"]


def test_tools_map_bfcl_types_to_json_schema() -> None:
    case = BfclCase(
        "live_simple_0",
        "live_simple",
        question=[{"role": "user", "content": "Go."}],
        functions=[
            {
                "name": "maps.route",
                "description": "Route.",
                "parameters": {
                    "type": "dict",
                    "required": ["points"],
                    "properties": {
                        "points": {"type": "tuple", "items": {"type": "float"}},
                        "options": {
                            "type": "dict",
                            "properties": {"avoid": {"type": "array", "items": {"type": "string"}}},
                        },
                        "hint": {"type": "any", "description": "anything"},
                        "speed": {"type": "float", "default": 1.0},
                    },
                },
            }
        ],
        answer=[{"maps.route": {"points": [[1.0, 2.0]]}}],
    )
    (tool,) = case.tools
    assert tool.name == "maps_route"
    assert tool.input_schema == {
        "type": "object",
        "required": ["points"],
        "properties": {
            "points": {"type": "array", "items": {"type": "number"}},
            "options": {
                "type": "object",
                "properties": {"avoid": {"type": "array", "items": {"type": "string"}}},
            },
            "hint": {"description": "anything"},
            "speed": {"type": "number", "default": 1.0},
        },
    }
    with pytest.raises(RuntimeError, match="judged, never run"):
        tool({"points": []})
    with pytest.raises(ValueError, match="unknown BFCL category"):
        BfclCase("x", "simple_java", [{"role": "user", "content": "x"}], [])


def test_limit_must_be_a_count(bfcl_dir: Path) -> None:
    for bad in (-1, True, 1.5):
        with pytest.raises(ValueError, match="limit"):
            load_bfcl(data_dir=bfcl_dir, limit=bad)  # type: ignore[arg-type]
