"""`python -m rig_nb demo` judges its two-tool loop as compare's `tool round trip` does
(`require_tool_call`, DESIGN Round 5): an answer made without calling the tools is not ok."""

from __future__ import annotations

import re

import pytest
from cli_helpers import cli

# Personas that answer the weather without calling a tool (recorded from llama.cpp servers).
NO_CALLS = ("llama-server-skip-recorded", "smollm2-chatml-recorded")


def test_the_demo_counts_an_answer_without_tool_calls_as_not_ok(
    capsys: pytest.CaptureFixture[str],
) -> None:
    ran = cli(capsys, "demo")
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.split("Per-iteration trace")[0].splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("persona "))
    header = re.split(r"\s{2,}", lines[start].strip())
    rows = []
    for line in lines[start + 1 :]:
        if not line.strip() or line.startswith(("shapes:", "probe:")):
            break
        rows.append(dict(zip(header, re.split(r"\s{2,}", line.strip()), strict=True)))
    by_name = {r["persona"]: r for r in rows}
    for name in NO_CALLS:
        assert (by_name[name]["outcome"], by_name[name]["tool calls"]) == (
            "NoToolCallingError",
            "0",
        )
    oks = [r for r in rows if r["outcome"] == "ok"]
    assert oks and all(int(r["tool calls"]) > 0 for r in oks)
    stripped = by_name["gpt-oss-stripped-tokens"]
    assert stripped["outcome"] == "ok" and not stripped["answer"].startswith("analysis")
