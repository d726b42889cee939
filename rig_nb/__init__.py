"""rig_nb: a hardened agent loop for self-hosted reasoning models, inspectable from a notebook."""

from .client import Client
from .content import decode_json_object, reasoning_shape, strip_reasoning
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
from .loop import RunRequest, RunResult
from .skill import Skill, advertise, load_skill_tool, load_skills, merge_skills
from .tool import Tool, tool
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
    "load_skill_tool",
    "load_skills",
    "merge_skills",
    "reasoning_shape",
    "strip_reasoning",
    "tool",
]

__version__ = "0.1.0"
