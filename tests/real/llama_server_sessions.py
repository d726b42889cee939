"""Real llama-server sessions packaged as demo personas, and how to record them again.

    .venv/bin/python tests/real/llama_server_sessions.py rig_nb/demo/recordings

builds the environment if missing (scripts/setup-llama, scripts/setup-llama-server), starts
llama.cpp's own llama-server three times with SmolLM2-135M under the Qwen3-thinking template
(`--reasoning-format deepseek`, `--reasoning-format none`, `--skip-chat-parsing`; greedy, no
prompt cache: llama_server_procs.DETERMINISTIC) and records, through `RecordingProxy` and with
no grammar (what SmolLM2 really does under each flag), the demo's requests: the tool_choice
matrix probes, `rig-nb demo`'s probe and tool loop (DEMO_PROMPT, DEMO_SYSTEM, demo_tools), the
notebooks' demo run, the doctor's question, and compare's DEFAULT_SCENARIOS. Each file is
`llama-server-<flavour>.jsonl`, served by the demo as `llama-server-<flavour>-recorded`.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from llama_server_procs import MODEL, llama_server, server_environment

from rig_nb import Client, RunRequest
from rig_nb.capabilities import endpoint_report, tool_choice_matrix
from rig_nb.compare import DEFAULT_SCENARIOS, Endpoint, Scenario, compare
from rig_nb.demo import DEMO_PROMPT, DEMO_SYSTEM, demo_tools
from rig_nb.demo.recording import RecordingProxy

TIMEOUT_S = 300.0
DEADLINE_S = 900.0
# Sent with every recorded request, so a test can prove that no key reaches the files
# (llama-server runs without --api-key and ignores it).
RECORDING_KEY = "sk-rig-nb-recording-key-never-kept"
# `rig-nb demo` runs each persona's loop with this budget (its --max-tokens default).
DEMO_MAX_TOKENS = 512

# file stem -> (llama-server flavour, note: the persona's description in the demo's model list)
FLAVOURS = {
    "llama-server-deepseek": (
        "think-deepseek",
        "SmolLM2-135M on llama.cpp's llama-server, Qwen3-thinking template, "
        "--reasoning-format deepseek: reasoning in reasoning_content (recorded, no grammar)",
    ),
    "llama-server-none": (
        "think-none",
        "SmolLM2-135M on llama.cpp's llama-server, Qwen3-thinking template, "
        "--reasoning-format none: <think> left in content (recorded, no grammar)",
    ),
    "llama-server-skip": (
        "think-skip",
        "SmolLM2-135M on llama.cpp's llama-server, Qwen3-thinking template, "
        "--skip-chat-parsing: the model's text verbatim in content (recorded, no grammar)",
    ),
}


def demo_scenarios() -> list[Scenario]:
    """What `rig-nb demo` (rig_nb.cli.commands.cmd_demo) sends each persona."""
    return [
        Scenario("probe", kind="probe"),
        Scenario(
            "demo",
            prompt=DEMO_PROMPT,
            system=DEMO_SYSTEM,
            tools=demo_tools(),
            max_tokens=DEMO_MAX_TOKENS,
        ),
    ]


def notebook_demo_run(model: str) -> RunRequest:
    """The demo's weather run as the notebooks send it."""
    return RunRequest(
        model, 256, system=DEMO_SYSTEM, prompt=DEMO_PROMPT, tools=demo_tools(), max_iterations=6
    )


def record_sessions(base_url: str, out: Path, note: str) -> None:
    """Append every session to `out` through a recording proxy in front of `base_url`."""
    with RecordingProxy(base_url, out, timeout=TIMEOUT_S, note=note) as proxy:
        endpoint = Endpoint("recording", proxy.base_url, MODEL, RECORDING_KEY)
        # One request at a time keeps each conversation's rounds in order in the file.
        compare([endpoint], scenarios=demo_scenarios(), concurrency=1, deadline=DEADLINE_S)
        with Client(proxy.base_url, RECORDING_KEY, timeout=TIMEOUT_S, deadline=DEADLINE_S) as c:
            tool_choice_matrix(c, MODEL)
            c.run_trace(notebook_demo_run(MODEL))
            # The doctor's question, not streamed (a streamed request is answered from it).
            endpoint_report(c, MODEL, stream=False)
        compare([endpoint], scenarios=DEFAULT_SCENARIOS, concurrency=1, deadline=DEADLINE_S)


@contextmanager
def flavour_server(flavour: str, logs: Path) -> Iterator[str]:
    """The base URL of a llama-server of `flavour`, for the duration of the block."""
    with llama_server(server_environment(), flavour, logs) as server:
        yield server.base_url


def main(out_dir: str) -> None:
    folder = Path(out_dir)
    with tempfile.TemporaryDirectory() as logs:
        for stem, (flavour, note) in FLAVOURS.items():
            out = folder / f"{stem}.jsonl"
            out.unlink(missing_ok=True)
            with flavour_server(flavour, Path(logs)) as base_url:
                record_sessions(base_url, out, note)
            print(f"{out}: {len(out.read_text().splitlines())} lines, {out.stat().st_size} bytes")


if __name__ == "__main__":
    main(sys.argv[1])
