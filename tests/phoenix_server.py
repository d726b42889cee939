"""A Phoenix server (arize-phoenix, pinned in scripts/setup-phoenix) on loopback: the real tier
reads spans back from it, the browser tier takes the README's picture of it.

scripts/setup-phoenix installs it into a venv of its own under the cache (about a minute
once; then it returns at once). `phoenix_server()` starts `python -m phoenix.server.main
serve` on 127.0.0.1 with a temporary working directory, free HTTP and gRPC ports and
telemetry off, waits (bounded) for /healthz, and stops it by PID.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from loopback import free_port
from project_setup import CACHE, run_setup

REPO = Path(__file__).resolve().parents[1]
# Keep in step with scripts/setup-phoenix (the venv is keyed by it).
PHOENIX_VERSION = "20.26.1"
START_S = 120.0  # /healthz answered after 13-25 s on 2 cores; a loaded machine takes longer


def phoenix_python() -> Path:
    """The Phoenix venv's python, installed by scripts/setup-phoenix if it is not there."""
    run_setup("phoenix", 900)
    python = CACHE / f"phoenix-venv-{PHOENIX_VERSION}" / "bin" / "python"
    assert python.is_file(), f"{python} is missing after scripts/setup-phoenix"
    return python


@dataclass
class Phoenix:
    base_url: str
    startup_s: float
    proc: subprocess.Popen[bytes] = field(repr=False)

    @property
    def traces_url(self) -> str:
        return f"{self.base_url}/v1/traces"

    def pause(self, seconds: float) -> None:
        """Wait up to `seconds` between two polls of Phoenix's API (it ingests spans
        asynchronously and signals nothing); an exit of the server ends the test at once."""
        try:
            self.proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            return
        raise AssertionError(f"Phoenix exited with {self.proc.returncode}")


@contextmanager
def phoenix_server(workdir: Path) -> Iterator[Phoenix]:
    port, grpc = free_port(), free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(workdir),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = (workdir / "phoenix.log").open("wb")
    started = time.monotonic()
    proc = subprocess.Popen(
        [str(phoenix_python()), "-m", "phoenix.server.main", "serve"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=workdir,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(trust_env=False, timeout=2.0) as http:
            while True:
                try:
                    if http.get(f"{base}/healthz").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() - started > START_S:
                    raise AssertionError(f"Phoenix gave no /healthz in {START_S:g} s")
                try:
                    proc.wait(timeout=0.25)  # the pause between tries; it also sees an exit
                except subprocess.TimeoutExpired:
                    continue
                raise AssertionError(
                    f"Phoenix exited with {proc.returncode}: "
                    + (workdir / "phoenix.log").read_text(errors="replace")[-2000:]
                )
        yield Phoenix(base, time.monotonic() - started, proc)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
