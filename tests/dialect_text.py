"""What the dialect tests share: a tagged call, a call a scan returns, decoder work counted."""

from __future__ import annotations

from typing import Any

import pytest

from rig_nb.dialects import TextToolCall
from rig_nb.dialects import _call_json as call_json
from rig_nb.dialects import scan as dialect_scan

BAR = "\uff5c"  # DeepSeek's fullwidth vertical bar


def tagged(name: str, arguments: str) -> str:
    """A call in the `<tool_call>` JSON dialect."""
    return f'<tool_call>{{"name": "{name}", "arguments": {arguments}}}</tool_call>'


def want(dialect: str, name: str, arguments: str = "{}", error: str = "") -> TextToolCall:
    """The TextToolCall a scan is expected to return."""
    return TextToolCall(dialect, name, arguments, error)


class DecoderCount:
    """The characters the scanners hand the JSON decoder, in `handed` (set 0 to restart)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.handed = 0
        scan_once = call_json.scan_once

        def counting(s: str, start: int) -> tuple[Any, int]:
            self.handed += len(s) - start
            return scan_once(s, start)

        for module in (call_json, dialect_scan):
            monkeypatch.setattr(module, "scan_once", counting)
