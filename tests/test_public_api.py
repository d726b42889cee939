from __future__ import annotations

import subprocess
import sys

import pytest

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


def test_all_is_pinned_and_sorted() -> None:
    assert rig_nb.__all__ == sorted(rig_nb.__all__)
    assert rig_nb.__all__ == CONTRACT


@pytest.mark.parametrize("name", CONTRACT)
def test_every_name_loads_from_its_own_module(name: str) -> None:
    obj = getattr(rig_nb, name)
    assert obj.__module__.startswith("rig_nb.")
    assert obj.__name__ == name
    assert name in dir(rig_nb)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        rig_nb.Nope  # noqa: B018


@pytest.mark.parametrize(
    ("module", "names"),
    [
        pytest.param(
            "rig_nb.compare", ["Endpoint", "Scenario", "compare", "summarize"], id="compare"
        ),
        pytest.param(
            "rig_nb.capabilities",
            [
                "endpoint_report",
                "EndpointReport",
                "Check",
                "tool_schema_report",
                "SchemaReport",
                "SchemaCheck",
            ],
            id="doctor",
        ),
        pytest.param(
            "rig_nb.report", ["save_html", "save_traces", "load_traces", "to_otel"], id="report"
        ),
        pytest.param(
            "rig_nb.widgets", ["TraceView", "ProbePanel", "LeakLab", "CompareView"], id="widgets"
        ),
        pytest.param("rig_nb.demo", ["DemoServer"], id="demo"),
        pytest.param("rig_nb.mcp", ["McpTools"], id="mcp"),
        pytest.param("rig_nb.schemas", ["sanitize", "sanitize_tools"], id="schemas"),
        pytest.param("rig_nb.evals", ["BfclCase", "bfcl_scenarios", "load_bfcl"], id="evals"),
    ],
)
def test_the_other_public_modules(module: str, names: list[str]) -> None:
    import importlib

    mod = importlib.import_module(module)
    for name in names:
        assert callable(getattr(mod, name))


def test_help_does_not_import_the_sdk() -> None:
    code = "import sys, rig_nb, rig_nb.__main__\nassert 'openai' not in sys.modules\n"
    subprocess.run([sys.executable, "-c", code], check=True)


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
