"""BFCL's first 25 cases of `simple_python` and `irrelevance`, sent to SmolLM2 on the tier's
vLLM (the hermes tool parser, tool_choice auto as BFCL's FC runner sends it).

Accuracy is not asserted (a 135M model, greedy): every row has a defined outcome (ok,
wrong_call with BFCL's error type, or the reply's ending) and the per-category table says
it. Four cases run at once: vLLM batches them. The figures and each miss are recorded in
FINDINGS.md, "BFCL".
"""

from __future__ import annotations

import dataclasses
import re

from bfcl_data import bfcl_data_dir
from vllm_server import MODEL, VllmServer

from rig_nb.compare import Endpoint, compare, summarize
from rig_nb.evals import bfcl_scenarios

CATEGORIES = ["simple_python", "irrelevance"]
LIMIT = 25
BUDGET = 96
ENDINGS = {
    "text_tool_calls",
    "tool_calls_in_reasoning",
    "reasoning_only",
    "empty",
    "length",
    "leaked",
}


def test_bfcl_on_vllm(vllm: VllmServer) -> None:
    scenarios = [
        dataclasses.replace(s, max_tokens=BUDGET)
        for s in bfcl_scenarios(CATEGORIES, data_dir=bfcl_data_dir(), limit=LIMIT)
    ]
    endpoint = Endpoint("vllm hermes", vllm.base_url, MODEL)
    df = compare([endpoint], scenarios=scenarios, concurrency=4, progress=False, timeout=600)
    assert len(df) == 2 * LIMIT and list(dict.fromkeys(df["group"])) == CATEGORIES
    for outcome, error in zip(df["outcome"], df["error"], strict=True):
        if outcome == "wrong_call":
            assert re.match(r"[a-z_]+:[a-z_/]+: ", error), error
        else:
            assert outcome == "ok" or outcome in ENDINGS, (outcome, error)
    table = summarize(df, by="group")
    print("\n" + table.to_string())
    for cell in table["vllm hermes"]:
        assert re.fullmatch(r"\d+/25 ok \(\d+%\)", cell)
    for _, row in df[df["outcome"] != "ok"].iterrows():
        print(f"  {row['scenario']}: {row['outcome']} {row['error'][:100]}")
