"""The Berkeley Function Calling Leaderboard (BFCL v4) in rig_nb: its data read, its
check reimplemented, its cases as compare scenarios.

    data.py     where the files are, each JSON line, what makes a case usable
    checker.py  BFCL's Python AST checker and error types, prepared once per case
    case.py     BfclCase (tools, check, scenario), load_bfcl, bfcl_scenarios
"""

from .case import BFCL_CATEGORIES, BfclCase, bfcl_scenarios, load_bfcl, tool_schema
from .checker import standardize
from .data import BFCL_VERSION

__all__ = [
    "BFCL_CATEGORIES",
    "BFCL_VERSION",
    "BfclCase",
    "bfcl_scenarios",
    "load_bfcl",
    "standardize",
    "tool_schema",
]
