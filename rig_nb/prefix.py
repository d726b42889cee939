"""Why a prefix cache broke: one request as sent against the one before it.

A server's prefix cache (vLLM's automatic prefix caching, llama-server's slot cache,
Ollama's, SGLang's radix cache) reuses a request's leading tokens only while each request
extends the previous one byte for byte. `prefix_break` names the first thing that did not:

- `system changed at char N: 'BEFORE' became 'AFTER'`: the system prompt differs from
  character N (counted from 0), with 40 characters of each from there, redacted;
- `tools changed: NAMES`: tools added, removed, redefined or reordered;
- `turn K rewritten (...)`: an earlier turn (K counted from 1 after the system prompt)
  sent differently, e.g. its reasoning dropped, or the conversation cut before it;

joined with "; " when several changed, and None when the request only grew. The reason
for the rules: a per-request nonce in the first system block busts every turn's cache
(Claude Code's attribution line, anthropics/claude-code#68900; ollama/ollama#14918:
74-93 s per turn at 28K tokens), and templates that drop earlier reasoning re-render the
history (QwenLM/Qwen3#1826, vllm-project/vllm#21732).

The cost is linear: the system prompts are compared in blocks (C `==` on slices), the
tools pairwise, and the turns one identity (or equality) test each, the loop sharing its
`Turn` objects between requests.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from .wire.sent import Sent

__all__ = ["SNIPPET_CHARS", "first_difference", "prefix_break", "snippet"]

# What a break shows of each side of a changed system prompt.
SNIPPET_CHARS = 40
# A key is one word: a snippet is redacted with the whole words around it, this far at most.
_WORD_REACH = 1024
_BLOCK = 4096
_NAMES_SHOWN = 8
_NAME_CHARS = 40
_KEY_MASK = "[redacted]"
# Secrets an endpoint's redactor does not know (it knows its own key): common key shapes.
_KEY_SHAPES = re.compile(
    r"(?:sk-(?:ant-|proj-)?|ghp_|gho_|github_pat_|hf_|xox[abpr]-|glpat-|AKIA)[A-Za-z0-9_\-]{12,}"
    r"|(?i:bearer)\s+[A-Za-z0-9._~+/=\-]{16,}"
)

Redact = Callable[[str], str]


def _same(text: str) -> str:
    return text


def first_difference(one: str, two: str) -> int:
    """The first index where `one` and `two` differ (the shorter's length when one extends
    the other); linear, in blocks compared by C."""
    limit = min(len(one), len(two))
    at = 0
    while at < limit and one[at : at + _BLOCK] == two[at : at + _BLOCK]:
        at += _BLOCK
    at = min(at, limit)
    stop = min(at + _BLOCK, limit)
    # The first differing block, halved until a few characters are left.
    while stop - at > 16:
        mid = (at + stop) // 2
        if one[at:mid] == two[at:mid]:
            at = mid
        else:
            stop = mid
    while at < stop and one[at] == two[at]:
        at += 1
    return at


_SPACES = (" ", "\n", "\t", "\r")


def _word_start(text: str, at: int) -> int:
    floor = max(0, at - _WORD_REACH)
    return max(floor, *(text.rfind(c, floor, at) + 1 for c in _SPACES))


def _word_end(text: str, at: int) -> int:
    ceiling = min(len(text), at + _WORD_REACH)
    found = [i for i in (text.find(c, at, ceiling) for c in _SPACES) if i >= 0]
    return min(found, default=max(at, ceiling))


# What each key shape starts with: the pattern is tried only on text that holds one (its
# alternation costs about 10 us on 70 characters, most of a break's time).
_KEY_HINTS = ("sk-", "ghp_", "gho_", "github_pat_", "hf_", "xox", "glpat-", "AKIA")


def _masked(text: str, redact: Redact) -> str:
    text = redact(text)
    if any(hint in text for hint in _KEY_HINTS) or "bearer" in text.lower():
        return _KEY_SHAPES.sub(_KEY_MASK, text)
    return text


def snippet(text: str, at: int, redact: Redact = _same) -> str:
    """`SNIPPET_CHARS` characters of `text` from `at`, redacted: the words around them are
    redacted whole first (a key cut in two would no longer be found), and when a secret
    straddles `at` the snippet starts at its mask."""
    start, end = _word_start(text, at), _word_end(text, at + SNIPPET_CHARS)
    window = text[start:end]
    shown = _masked(window, redact)
    if shown == window:  # nothing to hide: no second pass
        return " ".join(window[at - start : at - start + SNIPPET_CHARS].split("\n"))
    lead = _masked(text[start:at], redact)
    if shown.startswith(lead):
        shown = shown[len(lead) :]
    else:
        shown = shown[shown.find(_KEY_MASK) :] if _KEY_MASK in shown else shown
    return " ".join(shown[:SNIPPET_CHARS].split("\n"))


def _system_break(before: str, now: str, redact: Redact) -> str:
    at = first_difference(before, now)
    return (
        f"system changed at char {at}: {snippet(before, at, redact)!r} became "
        f"{snippet(now, at, redact)!r}"
    )


def _tools_break(
    before: Sequence[tuple[str, Any]], now: Sequence[tuple[str, Any]], redact: Redact
) -> str:
    old, new = dict(before), dict(now)
    names = [n for n in new if n not in old or old[n] != new[n]]
    names += [n for n in old if n not in new]
    if not names:  # the same tools in another order (or a name declared twice)
        names = [n for i, (n, _) in enumerate(now) if i >= len(before) or before[i][0] != n]
        names = list(dict.fromkeys(names)) or [n for n, _ in before[len(now) :]]
    shown = [_cut(_masked(n, redact), _NAME_CHARS) for n in names[:_NAMES_SHOWN]]
    more = f" and {len(names) - _NAMES_SHOWN} more" if len(names) > _NAMES_SHOWN else ""
    return f"tools changed: {', '.join(shown)}{more}"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _how(before: Any, now: Any) -> str:
    """What differs in a rewritten turn, in a few words (field names, never content)."""
    if now is None:
        return "dropped"
    role = getattr(now, "role", "")
    if getattr(before, "role", "") != role:
        return f"{getattr(before, 'role', '?')} became {role}"
    fields = getattr(before, "__dataclass_fields__", {})
    changed = [f for f in fields if getattr(before, f, None) != getattr(now, f, None)]
    said = []
    for name in changed:
        old, new = getattr(before, name), getattr(now, name)
        if old and not new:
            said.append(f"{name} dropped")
        elif new and not old:
            said.append(f"{name} added")
        else:
            said.append(f"{name} changed")
    return f"{role}: {', '.join(said)}" if said else role


def _turns_break(before: Sequence[Any], now: Sequence[Any]) -> str | None:
    kept = len(before)
    if len(now) >= kept and tuple(now[:kept]) == tuple(before):
        return None
    at = next(
        (i for i, (a, b) in enumerate(zip(before, now, strict=False)) if a is not b and a != b),
        len(now),
    )
    how = _how(before[at], now[at] if at < len(now) else None)
    return f"turn {at + 1} rewritten" + (f" ({how})" if how else "")


def prefix_break(before: Sent | None, now: Sent, redact: Redact | None = None) -> str | None:
    """Why `now` does not extend `before` (see the module's docstring); None when it only
    grew, or when there is no request before. `redact` (the endpoint's redactor) is applied
    to every snippet and name shown, and so are common key shapes."""
    if before is None:
        return None
    redactor = redact if redact is not None else _same
    said = []
    if before.system != now.system:
        said.append(_system_break(before.system, now.system, redactor))
    if before.tools != now.tools:
        said.append(_tools_break(before.tools, now.tools, redactor))
    turns = _turns_break(before.turns, now.turns)
    if turns is not None:
        said.append(turns)
    return "; ".join(said) if said else None
