"""`--otlp URL` on run and compare: the traces reach a collector on loopback; a collector
that fails is one line on stderr and exit 3 (never the run's own 0/1), naming no URL; a bad
URL, or opentelemetry-proto missing, is a usage error before any request."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import cli
from collector import Collector, spans
from loopback import free_port

from rig_nb.compare import DEFAULT_SCENARIOS
from rig_nb.demo import DemoServer

TOKEN = "t0k3n-in-the-collector-url"


@pytest.fixture
def collector() -> Iterator[Collector]:
    srv = Collector()
    try:
        yield srv
    finally:
        srv.close()


def roots(collector: Collector) -> list[str]:
    """The outcome of each run the collector received."""
    out = []
    for span in spans(collector):
        if not span.parent_span_id:
            (outcome,) = [
                a.value.string_value for a in span.attributes if a.key == "rig_nb.outcome"
            ]
            out.append(outcome)
    return out


def test_run_sends_its_trace(
    demo: DemoServer, collector: Collector, capsys: pytest.CaptureFixture[str]
) -> None:
    ran = cli(
        capsys, "run", "--base-url", demo.base_url, "--model", "well-behaved",
        "--prompt", "What is 2 + 2?", "--demo-tools", "--otlp", collector.url(),
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert ran.stderr == "sent 1 trace to the OTLP collector\n"
    assert roots(collector) == ["ok"]
    assert {s.name for s in spans(collector)} >= {"invoke_agent rig_nb", "chat well-behaved"}


def test_compare_sends_every_trace(
    demo: DemoServer, collector: Collector, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    toml = tmp_path / "endpoints.toml"
    toml.write_text(
        f'[[endpoint]]\nname = "a"\nbase_url = "{demo.base_url}"\nmodel = "well-behaved"\n'
    )
    ran = cli(capsys, "compare", str(toml), "--otlp", collector.url())
    n = len(DEFAULT_SCENARIOS)
    assert ran.returncode == 0, ran.stderr
    assert f"sent {n} traces to the OTLP collector" in ran.stderr
    assert roots(collector) == ["ok"] * n


def test_a_collector_that_refuses_is_one_line_and_exit_3(
    demo: DemoServer, capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_port()
    ran = cli(
        capsys, "run", "--base-url", demo.base_url, "--model", "well-behaved",
        "--prompt", "hi", "--otlp", f"http://127.0.0.1:{port}/{TOKEN}/v1/traces",
    )  # fmt: skip
    assert ran.returncode == 3
    assert ran.stdout  # the trace is printed first
    assert ran.stderr.startswith("rig-nb: --otlp: ai backend: OTLP export: connection failed")
    assert ran.stderr.count("\n") == 1 and TOKEN not in ran.stderr and str(port) not in ran.stderr


def test_a_collector_answering_500(demo: DemoServer, capsys: pytest.CaptureFixture[str]) -> None:
    srv = Collector(500, b"<h1>boom</h1>", "text/html")
    try:
        ran = cli(
            capsys, "run", "--base-url", demo.base_url, "--model", "well-behaved",
            "--prompt", "hi", "--otlp", srv.url(f"/{TOKEN}/v1/traces"),
        )  # fmt: skip
    finally:
        srv.close()
    assert ran.returncode == 3
    assert ran.stderr == "rig-nb: --otlp: ai backend: OTLP export: HTTP 500: boom\n"


@pytest.mark.parametrize(
    "url", ["ftp://127.0.0.1/v1/traces", f"127.0.0.1:4318/{TOKEN}", "http://h:99999/v1/traces"]
)
def test_a_bad_otlp_url_is_a_usage_error(
    demo: DemoServer, capsys: pytest.CaptureFixture[str], url: str
) -> None:
    ran = cli(
        capsys, "run", "--base-url", demo.base_url, "--model", "well-behaved",
        "--prompt", "hi", "--otlp", url,
    )  # fmt: skip
    assert ran.returncode == 2
    assert "--otlp" in ran.stderr and "full http(s) URL" in ran.stderr
    assert TOKEN not in ran.stderr and "Traceback" not in ran.stderr


def test_a_failed_run_whose_export_fails_exits_3_and_says_both(
    demo: DemoServer, capsys: pytest.CaptureFixture[str]
) -> None:
    srv = Collector(500, b"<h1>boom</h1>", "text/html")
    try:
        ran = cli(
            capsys, "run", "--base-url", demo.base_url, "--model", "hermes-text-tools",
            "--demo-tools", "--prompt", "What is the weather in Paris?",
            "--otlp", srv.url(f"/{TOKEN}/v1/traces"),
        )  # fmt: skip
    finally:
        srv.close()
    assert ran.returncode == 3
    first, second = ran.stderr.splitlines()
    assert first == "rig-nb: --otlp: ai backend: OTLP export: HTTP 500: boom"
    assert second.startswith("rig-nb: outcome text_tool_calls")
    assert TOKEN not in ran.stderr


def test_compare_whose_export_fails_exits_3(
    demo: DemoServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    toml = tmp_path / "endpoints.toml"
    toml.write_text(
        f'[[endpoint]]\nname = "a"\nbase_url = "{demo.base_url}"\nmodel = "well-behaved"\n'
    )
    port = free_port()
    ran = cli(capsys, "compare", str(toml), "--otlp", f"http://127.0.0.1:{port}/v1/traces")
    assert ran.returncode == 3
    assert "probe" in ran.stdout  # the rows are printed first
    assert ran.stderr.count("\n") == 1
    assert ran.stderr.startswith("rig-nb: --otlp: ai backend: OTLP export: connection failed")


@pytest.mark.parametrize("command", ["run", "compare"])
def test_opentelemetry_proto_missing_is_found_before_any_request(
    demo: DemoServer,
    collector: Collector,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
) -> None:
    # None in sys.modules: importing the package raises ImportError, as when it is absent.
    monkeypatch.setitem(sys.modules, "opentelemetry.proto.collector.trace.v1", None)
    last = demo.requests[-1] if demo.requests else None
    if command == "run":
        args = ["run", "--base-url", demo.base_url, "--model", "well-behaved", "--prompt", "hi"]
    else:
        toml = tmp_path / "endpoints.toml"
        toml.write_text(
            f'[[endpoint]]\nname = "a"\nbase_url = "{demo.base_url}"\nmodel = "well-behaved"\n'
        )
        args = ["compare", str(toml)]
    ran = cli(capsys, *args, "--otlp", collector.url())
    assert ran.returncode == 2
    assert ran.stdout == ""
    assert ran.stderr.count("\n") == 1
    assert ran.stderr.startswith("rig-nb: --otlp needs opentelemetry-proto: pip install")
    assert "[otlp]" in ran.stderr
    assert (demo.requests[-1] if demo.requests else None) is last
    assert collector.requests == []
