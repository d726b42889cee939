"""Evaluations people already trust, run through compare: BFCL v4's single-turn categories.

    cases = load_bfcl(["simple_python", "irrelevance"], limit=25)
    df = compare(endpoints, scenarios=[c.scenario() for c in cases])
    summarize(df, by="group")      # category x endpoint: "k/n ok (p%)"

rig_nb reads BFCL's data (from `data_dir`, or an installed `bfcl_eval` package's,
found without importing it) and reimplements its AST check, so it needs none of
bfcl-eval's dependencies. A row that misses says why: `wrong_call` with BFCL's
error type, or how the reply ended when it made no call the way BFCL reads one
(`text_tool_calls`, `tool_calls_in_reasoning`, `reasoning_only`, ...).
"""

from .bfcl import BFCL_CATEGORIES, BfclCase, bfcl_scenarios, load_bfcl

__all__ = ["BFCL_CATEGORIES", "BfclCase", "bfcl_scenarios", "load_bfcl"]
