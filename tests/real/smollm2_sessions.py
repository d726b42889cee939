"""The real sessions packaged in rig_nb/demo/recordings/, and how to record them again.

    .venv/bin/python tests/real/smollm2_sessions.py rig_nb/demo/recordings

builds the environment if missing (scripts/setup-llama), starts both llama.cpp
servers, and records through `RecordingProxy`: the tool_choice matrix probes,
the demo's weather run, a one-tool loop, a small-budget run, and compare's default scenarios,
so the demo, the notebooks and compare replay a real model's replies.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from llama_servers import MODEL, TIMEOUT_S, environment, serving

from rig_nb import Client, RigError, RunRequest
from rig_nb.capabilities import tool_choice_matrix
from rig_nb.compare import Endpoint, compare
from rig_nb.demo import DEMO_PROMPT, DEMO_SYSTEM, demo_tools
from rig_nb.demo.recording import RecordingProxy

# file stem -> (chat format, note shown as the persona's description)
SERVERS = {
    "smollm2": (
        "chatml-function-calling",
        "SmolLM2-135M-Instruct recorded on llama.cpp (chatml-function-calling): real tool calls",
    ),
    "smollm2-chatml": (
        "chatml",
        "SmolLM2-135M-Instruct recorded on llama.cpp (chatml): never calls tools",
    ),
}
SMALL_BUDGET = RunRequest(
    MODEL, 16, prompt="Write a long story about a lighthouse keeper and a storm."
)


def demo_run(model: str) -> RunRequest:
    """The demo's standard weather run, as the notebooks send it."""
    return RunRequest(
        model, 256, system=DEMO_SYSTEM, prompt=DEMO_PROMPT, tools=demo_tools(), max_iterations=6
    )


def paris_loop(model: str) -> RunRequest:
    """One tool, one city: SmolLM2 calls it round after round, its arguments drifting."""
    get_weather = demo_tools()[0]
    return RunRequest(
        model,
        128,
        prompt="What is the weather in Paris? Use the get_weather tool.",
        tools=(get_weather,),
        max_iterations=8,
    )


def record_sessions(base_url: str, out: Path, note: str) -> None:
    """Append every session to `out` through a recording proxy in front of `base_url`."""
    with RecordingProxy(base_url, out, timeout=TIMEOUT_S, note=note) as proxy:
        with Client(proxy.base_url, timeout=TIMEOUT_S) as client:
            tool_choice_matrix(client, MODEL)
            for request in (demo_run(MODEL), paris_loop(MODEL), SMALL_BUDGET):
                try:
                    client.run(request)
                except RigError:
                    pass  # a failed run is recorded like any other
        # One pair at a time keeps each conversation's rounds in order in the file.
        compare([Endpoint("recording", proxy.base_url, MODEL)], concurrency=1, timeout=TIMEOUT_S)


def main(out_dir: str) -> None:
    gguf = environment()
    folder = Path(out_dir)
    with tempfile.TemporaryDirectory() as logs:
        for stem, (chat_format, note) in SERVERS.items():
            out = folder / f"{stem}.jsonl"
            out.unlink(missing_ok=True)
            with serving(gguf, chat_format, Path(logs)) as server:
                record_sessions(server.base_url, out, note)
            print(f"{out}: {len(out.read_text().splitlines())} lines")


if __name__ == "__main__":
    main(sys.argv[1])
