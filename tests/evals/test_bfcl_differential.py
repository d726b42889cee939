"""rig_nb's BFCL check against bfcl-eval's own, case by case: every case of the ten
categories with its possible answers made into calls, and seeded wrong calls.

bfcl-eval 2026.3.23 runs in scripts/setup-bfcl's venv as a subprocess
(bfcl_reference.py: its FC evaluation path, `decode_ast` then `ast_checker`); the two
must give the same (valid, error type) on every job. Importing bfcl-eval's checker
takes about 10 s (it imports every model handler), hence `slow`.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from bfcl_cases import edge_calls
from bfcl_data import job, reference_verdicts

from rig_nb.evals import BFCL_CATEGORIES, BfclCase, load_bfcl

pytestmark = pytest.mark.slow


def _value(schema: dict[str, Any], rng: random.Random) -> Any:
    """A value of a BFCL type, as a model filling the schema might write it."""
    kind = schema.get("type")
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return rng.choice(schema["enum"])
    if kind == "integer":
        return rng.randint(0, 9)
    if kind == "float":
        return rng.choice([1.5, 2, 0.0])
    if kind == "boolean":
        return rng.random() < 0.5
    if kind in ("array", "tuple"):
        return [_value(schema.get("items", {}), rng) for _ in range(rng.randint(0, 2))]
    if kind == "dict":
        props = schema.get("properties", {})
        return {k: _value(v, rng) for k, v in props.items()}
    return rng.choice(["Paris", "a", "", "New York, NY"])


def _answer_calls(case: BfclCase, pick: int) -> list[tuple[str, str]]:
    """The possible answers as calls: each parameter's first (pick 0) or last value; a
    parameter whose chosen value is "" left out."""
    calls = []
    for entry in case.answer:
        name, params = next(iter(entry.items()))
        args = {}
        for param, values in params.items():
            if values and values[-pick] != "":
                args[param] = values[-pick]
        calls.append((name.replace(".", "_"), json.dumps(args)))
    return calls


def _mutants(case: BfclCase, rng: random.Random) -> list[list[tuple[str, str]]]:
    """Seeded wrong (and sometimes right) variants of the answer calls."""
    if not case.answer:
        if not case.functions:
            return [[("anything", "{}")]]
        chosen = rng.choice(case.functions)
        props = chosen["parameters"]["properties"]
        made = {k: _value(v, rng) for k, v in props.items()}
        name = chosen["name"].replace(".", "_")
        return [
            [(name, json.dumps(made))],
            [(name, "{")],
            [(name, json.dumps([made]))],
            [(name, json.dumps(made))] * 2,
        ]
    base = _answer_calls(case, 0)
    out: list[list[tuple[str, str]]] = [[], base + base[:1], list(reversed(base))]
    out.append([(base[0][0] + "_x", base[0][1]), *base[1:]])
    out.append([(base[0][0], "{not json"), *base[1:]])
    out.append([(base[0][0], "[]"), *base[1:]])
    dotted = next((f["name"] for f in case.functions if "." in f["name"]), None)
    if dotted:
        out.append([(dotted, base[0][1]), *base[1:]])
    for n, (name, raw) in enumerate(base):
        args = json.loads(raw)
        function = next(
            (f for f in case.functions if f["name"].replace(".", "_") == name), case.functions[0]
        )
        props = function["parameters"]["properties"]
        changed = []
        for key in list(args)[:3]:
            value = args[key]
            for other in (
                _value(props.get(key, {}), rng),
                str(value),
                [value],
                {"v": value},
                value + 1 if type(value) in (int, float) else value,
                True,
                None,
            ):
                changed.append({**args, key: other})
            changed.append({k: v for k, v in args.items() if k != key})
        changed.append({**args, "unexpected_param": 1})
        for key in props:
            if key not in args:
                changed.append({**args, key: _value(props[key], rng)})
        for variant in rng.sample(changed, min(len(changed), 6)):
            out.append([*base[:n], (name, json.dumps(variant)), *base[n + 1 :]])
    return out


def _jobs(cases: list[BfclCase]) -> list[tuple[BfclCase, list[tuple[str, str]]]]:
    rng = random.Random(43)
    jobs = []
    for case in cases:
        if case.answer:
            jobs.append((case, _answer_calls(case, 0)))
            jobs.append((case, _answer_calls(case, 1)))
        jobs.extend((case, calls) for calls in _mutants(case, rng))
    return jobs


def test_the_hand_written_rules_are_bfcl_evals() -> None:
    pairs = edge_calls()
    theirs = reference_verdicts([job(c, calls, f"{n}") for n, (c, calls) in enumerate(pairs)])
    ours = [case.check(calls) for case, calls in pairs]
    assert ours == [(v["valid"], v["error_type"]) for v in theirs]


def test_rig_nb_agrees_with_bfcl_eval_on_every_case(bfcl_dir: Path) -> None:
    cases = load_bfcl(BFCL_CATEGORIES, data_dir=bfcl_dir)
    assert len(cases) == 3475  # every case of the ten categories is judged: none skipped
    pairs = _jobs(cases)
    theirs = reference_verdicts([job(c, calls, f"{n}") for n, (c, calls) in enumerate(pairs)])
    assert len(theirs) == len(pairs)
    crashed: Counter[str] = Counter()
    differ = []
    kinds: Counter[str] = Counter()
    for (case, calls), verdict in zip(pairs, theirs, strict=True):
        ours = case.check(calls)
        if verdict["error_type"].startswith("crash"):
            crashed[verdict["error_type"]] += 1
            continue
        kinds[verdict["error_type"]] += 1
        if ours != (verdict["valid"], verdict["error_type"]):
            differ.append((case.id, calls, ours, verdict))
    assert differ[:5] == []
    assert not crashed, crashed
    # The seeds reach BFCL's error types, not only its passes.
    assert {
        "",
        "simple_function_checker:wrong_func_name",
        "simple_function_checker:missing_required",
        "simple_function_checker:unexpected_param",
        "type_error:simple",
        "value_error:string",
        "value_error:others",
        "parallel_function_checker_no_order:wrong_count",
        "parallel_function_checker_no_order:cannot_find_match",
        "multiple_function_checker:wrong_count",
        "irrelevance_error:decoder_success",
        "ast_decoder:decoder_failed",
        "ast_decoder:decoder_wrong_output_format",
    } <= set(kinds)
    # Every case's possible answers, as written, pass where bfcl-eval passes them.
    answered = [p for p in pairs if p[0].answer]
    assert len(answered) >= 2 * (3475 - 240 - 884)
