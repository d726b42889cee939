"""rig_nb: a hardened agent loop for self-hosted reasoning models, inspectable from a notebook.

Names load on first use (PEP 562), so `python -m rig_nb --help` and the
library's light parts do not wait for the openai SDK to import.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__ as __version__
from .errors import (
    BackendError,
    InvalidJSONError,
    IterationLimitError,
    NotJSONError,
    NoToolCallingError,
    OutputLimitError,
    ResponseTooLargeError,
    RigError,
    SkillError,
)

# Eager: the submodule `rig_nb.tool` must never shadow the function `tool`.
from .tool import Tool, tool

if TYPE_CHECKING:
    from .client import Client
    from .content import decode_json_object, reasoning_shape, split_reasoning, strip_reasoning
    from .dialects import find_text_tool_calls, leak_dialects
    from .loop import RunRequest, RunResult
    from .skill import Skill, advertise, load_skill_tool, load_skills, merge_skills
    from .trace import Iteration, ToolCallRecord, Trace

__all__ = [
    "BackendError",
    "Client",
    "InvalidJSONError",
    "Iteration",
    "IterationLimitError",
    "NoToolCallingError",
    "NotJSONError",
    "OutputLimitError",
    "ResponseTooLargeError",
    "RigError",
    "RunRequest",
    "RunResult",
    "Skill",
    "SkillError",
    "Tool",
    "ToolCallRecord",
    "Trace",
    "advertise",
    "decode_json_object",
    "find_text_tool_calls",
    "leak_dialects",
    "load_skill_tool",
    "load_skills",
    "merge_skills",
    "reasoning_shape",
    "split_reasoning",
    "strip_reasoning",
    "tool",
]

_HOME = {
    "Client": "client",
    "decode_json_object": "content",
    "reasoning_shape": "content",
    "strip_reasoning": "content",
    "split_reasoning": "content",
    "leak_dialects": "dialects",
    "find_text_tool_calls": "dialects",
    "RunRequest": "loop",
    "RunResult": "loop",
    "Skill": "skill",
    "advertise": "skill",
    "load_skill_tool": "skill",
    "load_skills": "skill",
    "merge_skills": "skill",
    "Iteration": "trace",
    "ToolCallRecord": "trace",
    "Trace": "trace",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'rig_nb' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
