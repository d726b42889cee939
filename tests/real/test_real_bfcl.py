"""BFCL's first 25 cases of `simple_python` and `irrelevance`, sent to SmolLM2 on llama-server
under llama.cpp's Hermes-2-Pro tool template (the server that makes real tool calls).

Accuracy is not asserted (a 135M model, greedy): every row must have a defined outcome (ok,
wrong_call with BFCL's error type, or the reply's ending), and the per-category table must
say it. `pytest -s` prints the table and each miss; they are recorded in FINDINGS.md, "BFCL".
"""

from __future__ import annotations

import dataclasses
import re

import pytest
from bfcl_data import bfcl_data_dir
from llama_server_procs import Proc

from rig_nb.compare import Endpoint, compare, summarize
from rig_nb.evals import bfcl_scenarios

pytestmark = pytest.mark.real

CATEGORIES = ["simple_python", "irrelevance"]
LIMIT = 25
# A call to a one-function case is short; SmolLM2 at 2 cores writes about 30 tokens a second.
BUDGET = 128
ENDINGS = {
    "text_tool_calls",
    "tool_calls_in_reasoning",
    "reasoning_only",
    "empty",
    "length",
    "leaked",
}


def test_bfcl_on_llama_server(hermes_tools_server: Proc) -> None:
    scenarios = [
        dataclasses.replace(s, max_tokens=BUDGET)
        for s in bfcl_scenarios(CATEGORIES, data_dir=bfcl_data_dir(), limit=LIMIT)
    ]
    endpoint = Endpoint("llama-server hermes", hermes_tools_server.base_url, "smollm2")
    df = compare([endpoint], scenarios=scenarios, concurrency=1, progress=False)
    assert len(df) == 2 * LIMIT and list(dict.fromkeys(df["group"])) == CATEGORIES
    for outcome, error in zip(df["outcome"], df["error"], strict=True):
        if outcome == "wrong_call":
            assert re.match(r"[a-z_]+:[a-z_/]+: ", error), error
        else:
            assert outcome == "ok" or outcome in ENDINGS, (outcome, error)
    table = summarize(df, by="group")
    print("\n" + table.to_string())
    for cell in table["llama-server hermes"]:
        assert re.fullmatch(r"\d+/25 ok \(\d+%\)", cell)
    misses = df[df["outcome"] != "ok"]
    for _, row in misses.iterrows():
        print(f"  {row['scenario']}: {row['outcome']} {row['error'][:100]}")
