"""Helpers shared by the command-line tests: run `rig-nb` in process or as a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from rig_nb.cli import main

KEY = "sk-test-0123456789abcdef"


def child_env(**extra: str) -> dict[str, str]:
    """A subprocess's environment: this test's, which conftest's `clean_environ` has already
    cleared of what the SDK and the terminal would bring in, plus `extra`."""
    return {**os.environ, **extra}


def rig(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rig_nb", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=child_env(**env),
    )


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


def cli(capsys: pytest.CaptureFixture[str], *args: str, columns: int = 10_000) -> Ran:
    """`main(args)` in this process, with what it printed, on a terminal `columns` wide.

    COLUMNS is set for the call: tables fit the terminal, and the one pytest runs in
    must not decide what a test sees.
    """
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(columns)
    try:
        status = main(list(args))
    except SystemExit as exc:  # argparse: --help, usage errors
        status = int(exc.code or 0)
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved
    out, err = capsys.readouterr()
    return Ran(status, out, err)


def assert_one_line_error(
    proc: Ran | subprocess.CompletedProcess[str], status: int, *parts: str
) -> None:
    assert proc.returncode == status, proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert proc.stderr.startswith("rig-nb") and proc.stderr.count("\n") == 1, proc.stderr
    for part in parts:
        assert part in proc.stderr


def endpoints_toml(tmp_path: Path, *tables: tuple[str, str, str]) -> str:
    """An endpoints file in `tmp_path` with one `[[endpoint]]` table per (name, base_url, model)."""
    path = tmp_path / "endpoints.toml"
    path.write_text(
        "".join(
            f'[[endpoint]]\nname = "{n}"\nbase_url = "{u}"\nmodel = "{m}"\n' for n, u, m in tables
        )
    )
    return str(path)
