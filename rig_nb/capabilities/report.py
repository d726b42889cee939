"""What the doctor found, as data: `Check` (one finding), `EndpointReport` (all of them, and
what the server says of itself), `describe_report` (the report as text), and whether a
verdict is good news (`Check.ok`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..trace import Trace, _pandas

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "NOT_OPENAI_COMPATIBLE",
    "Check",
    "EndpointReport",
    "describe_report",
    "report_head",
    "verdict_ok",
]

# The one check of an address that does not serve the API: no other check is made.
NOT_OPENAI_COMPATIBLE = "not_openai_compatible"
# Verdicts that say nothing either way, whatever the check.
_NEUTRAL = ("n/a", "not checked", "cancelled", "error")
# Per check: verdict prefixes that are good news, and those that are bad news; any other
# verdict is information only (None).
_JUDGED: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "tool_choice_auto": (("tool call",), ("text", "call in reasoning")),
    "reasoning_location": (("none", "field:"), ("content:",)),
    "leak_dialects": (("no",), ("",)),
    "text_tool_calls": (("no",), ("",)),
    "native_call_hygiene": (("clean",), ("markup", "empty arguments")),
    "stream_parity": (("same",), ("differs",)),
    "stream_grammar": (("conforms",), ("faults",)),
    "usage_reported": (("yes",), ()),
    "reasoning_replay": (("rendered via",), ()),
    "thinking_switch": (("honored",), ("ignored",)),
    "structured_output": (("content",), ("reasoning", "ignored")),
    "context_window": (("error at", "fits"), ("truncates silently",)),
    "prefix_cache": (("reused",), ("not reused",)),
    "concurrency": (("parallel",), ("crossed", "errors under load")),
    "tool_schemas": (("ok",), ("",)),
    "honored_params": (("all honored",), ("ignored", "rejected")),
    "agent_clients": ((), ()),
    NOT_OPENAI_COMPATIBLE: ((), ("",)),
}


def verdict_ok(name: str, verdict: str, advice: str = "") -> bool | None:
    """Whether `verdict` of check `name` is good news (True), bad news (False), or says
    nothing either way (None: information, an inconclusive or failed check)."""
    if verdict in _NEUTRAL or verdict.startswith("cancelled"):
        return None
    if verdict.startswith("error "):  # the check's own request failed: nothing was judged
        return False if name == "tool_choice_auto" else None
    good, bad = _JUDGED.get(name, ((), ()))
    if name == "prefix_cache" and verdict.startswith("reused") and advice:
        # Reuse that fell (a template that re-renders the history) is bad news (issue 45).
        return False
    if any(verdict.startswith(g) for g in good):
        return True
    if name == "reasoning_replay" and verdict == "ignored":
        # Only a model that reasons loses anything: the check gives advice only then.
        return False if advice else None
    if name == "agent_clients":
        return _clients_ok(verdict)
    if any(verdict.startswith(b) for b in bad):
        return False
    return None


# A profile that was not run: its wire is not answered, or it streams in an unstreamed report.
_UNRUN = frozenset({"n/a", "not checked"})


def _clients_ok(verdict: str) -> bool | None:
    """`claude-code ok; codex error 400; ...`: False when any profile did not end ok."""
    said = [part.strip().split(" ", 1) for part in verdict.split(";") if part.strip()]
    ran = [rest for _, rest in (p for p in said if len(p) == 2) if rest not in _UNRUN]
    if not ran:
        return None
    return all(rest == "ok" for rest in ran)


@dataclass
class Check:
    """One finding: its verdict, the evidence for it, the server-side fix, and its trace.
    `ok` says whether the verdict is good news (True), bad news (False) or information only
    (None); set from the verdict when not given."""

    name: str
    verdict: str
    evidence: str = ""
    advice: str = ""
    trace: Trace | None = field(default=None, repr=False)
    ok: bool | None = None

    def __post_init__(self) -> None:
        if self.ok is None:
            self.ok = verdict_ok(self.name, self.verdict, self.advice)


@dataclass
class EndpointReport:
    """What `endpoint_report` found: the model, the guessed server kind, each check, and
    what the server says of itself (its version, "" when none; the tokens one request may
    hold, None when unknown); `requests` is how many model requests it made."""

    model: str
    server: str
    checks: list[Check] = field(default_factory=list)
    server_version: str = ""
    context_window: int | None = None
    requests: int = 0

    @property
    def ok(self) -> bool:
        """False when any check's verdict is bad news; True otherwise."""
        return all(c.ok is not False for c in self.checks)

    def check(self, name: str) -> Check:
        for c in self.checks:
            if c.name == name:
                return c
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "server": self.server,
            "server_version": self.server_version,
            "context_window": self.context_window,
            "requests": self.requests,
            "ok": self.ok,
            "checks": [
                {
                    "name": c.name,
                    "verdict": c.verdict,
                    "ok": c.ok,
                    "evidence": c.evidence,
                    "advice": c.advice,
                }
                for c in self.checks
            ],
        }

    def to_dataframe(self) -> pd.DataFrame:
        """One row per check: check, verdict, evidence, advice."""
        rows = [(c.name, c.verdict, c.evidence, c.advice) for c in self.checks]
        columns = ["check", "verdict", "evidence", "advice"]
        df: pd.DataFrame = _pandas().DataFrame(rows, columns=columns)
        return df


def report_head(
    model: str, server: str, version: str, window: int | None, foreign: bool = False
) -> str:
    """The doctor's first printed line: the model, the server kind, its version and window."""
    head = f"{model}: server {server}" + (f" {version}" if version else "")
    if foreign:
        return head
    return head + (f", context window {window} tokens" if window else ", context window unknown")


def describe_report(report: EndpointReport) -> str:
    """The report as text: a header line (the model, the server kind, its version and its
    context window), then one block per check (one block, headed
    `not_openai_compatible`, for an address that does not serve the API)."""
    foreign = any(c.name == NOT_OPENAI_COMPATIBLE for c in report.checks)
    version, window = report.server_version, report.context_window
    lines = [report_head(report.model, report.server, version, window, foreign)]
    for c in report.checks:
        lines.append(f"  {c.name:<26} {c.verdict}")
        if c.evidence:
            lines.append(f"  {'':<26} evidence: {c.evidence}")
        if c.advice:
            lines.append(f"  {'':<26} fix: {c.advice}")
    return "\n".join(lines)
