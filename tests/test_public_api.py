from __future__ import annotations

import subprocess
import sys

import rig_nb

CONTRACT = [
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


def test_all_is_pinned_and_sorted() -> None:
    assert rig_nb.__all__ == sorted(rig_nb.__all__)
    assert rig_nb.__all__ == CONTRACT
    for name in rig_nb.__all__:
        assert getattr(rig_nb, name) is not None


def test_every_error_is_a_rig_error() -> None:
    for name in CONTRACT:
        obj = getattr(rig_nb, name)
        if name.endswith("Error"):
            assert issubclass(obj, rig_nb.RigError)


def test_import_does_not_pull_pandas_or_ipywidgets() -> None:
    code = (
        "import sys, rig_nb\n"
        "bad = [m for m in ('pandas', 'ipywidgets') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
