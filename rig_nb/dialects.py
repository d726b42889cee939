"""Leak dialects: markup that reasoning models leave in a reply's content, and calls written in it.

Each dialect, with one example as seen in the wild and where its format is defined:

- ``harmony`` (gpt-oss): ``<|channel|>analysis<|message|>...<|end|><|start|>assistant<|channel|>
  final<|message|>...`` (sgl-project/sglang#10061); calls ``<|start|>assistant<|channel|>
  commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}<|call|>``
  (vLLM's openai tool parser, llama.cpp common/chat.cpp). With the tokens stripped:
  ``analysisUser says "Hello World!"...assistantfinalHello! How can I help you today?``
  (oobabooga/text-generation-webui#7374).
- ``tool-call-tag`` (Hermes, Qwen, GLM): ``<tool_call>\\n{"name": "search_products",
  "arguments": {...}}\\n</tool_call>`` (lmstudio-ai/lmstudio-bug-tracker#825; vLLM's hermes
  parser); GLM's ``<tool_call>list_mailboxes<arg_key>folder</arg_key>...``
  (osaurus-ai/vmlx-swift PR#228; vLLM's glm4_moe parser).
- ``function-tag`` (Qwen3-Coder): ``<function=exec_command>\\n<parameter=cmd>\\necho LEAK_TEST\\n
  </parameter>\\n</function>\\n</tool_call>`` (ollama/ollama PR#17742; vLLM's qwen3coder parser).
- ``mistral-tool-calls``: ``[TOOL_CALLS][{"name": "read_file", "arguments": {...}, "id":
  "abcdefghi"}]`` (lmstudio-ai/lmstudio-bug-tracker#797), ``[TOOL_CALLS]get_weather[ARGS]
  {"city": "Paris"}`` (ml-explore/mlx-lm PR#1643; vLLM's mistral parser).
- ``kimi-tool-calls``: ``<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0
  <|tool_call_argument_begin|>{"city": "NYC"}<|tool_call_end|><|tool_calls_section_end|>``
  (vLLM's kimi_k2 parser, llama.cpp's kimi_k2 chat format).
- ``think-brackets`` (Magistral): ``[THINK]...[/THINK]`` (vLLM's mistral reasoning parser).
- ``seed-think`` (Seed-OSS): ``<seed:think>...</seed:think>`` (vLLM's seed_oss reasoning parser).
- ``thought-tag`` (EXAONE Deep): ``<thought>...</thought>\\boxed{4}`` (tinyhumansai/openhuman#6184).
- ``gemma-channel`` (Gemma 4): ``<|channel>thought\\n...<channel|>`` (vLLM's gemma4 reasoning
  parser).
- ``dsml`` (DeepSeek V3.2): ``<\\uff5cDSML\\uff5cfunction_calls>\\n<\\uff5cDSML\\uff5cinvoke
  name="get_weather">...`` with U+FF5C fullwidth bars (vLLM's deepseekv32 tool parser).

Markers inside closed fenced code blocks or inline code spans are quoted, not
leaked (`_dialect_code`; in a reply of at most 10,000 backticks and tildes);
markers anywhere else count, JSON strings included. The
token-stripped harmony remains are ``analysis`` glued to a capital letter at the
start of the reply, ``assistant`` glued to a channel name (``assistantfinal``,
``assistantcommentary``, ``assistantanalysis``), or a ``to=functions.`` recipient:
English writes none of them. GLM's ``<arg_key>`` counts as ``tool-call-tag`` (its
``<tool_call>`` is a special token a server may strip).

Calls are read from tool-call-tag (JSON, GLM and Qwen3-Coder bodies),
function-tag, mistral-tool-calls, kimi-tool-calls and harmony commentary
messages; dsml and token-stripped harmony calls are detected, not read. Nothing
is read from reasoning: the other dialects' blocks, harmony analysis messages,
and everything before a reasoning closer with no opener (the rule
strip_reasoning applies to ``</think>``), a closer inside a call's arguments
included (`_dialect_scan`).

Every function here is linear in the reply's length on any input and never
raises: a reply is chosen by the endpoint, and fits a 1 MiB response cap.
"""

from __future__ import annotations

import re
from functools import cache

from ._dialect_calls import TextToolCall
from ._dialect_code import mask_code
from ._dialect_scan import FUNCTION_TAG, RECIPIENT, STRIPPED, STRIPPED_START, scan

__all__ = [
    "DIALECTS",
    "TOOL_CALL_DIALECTS",
    "TextToolCall",
    "find_text_tool_calls",
    "has_text_tool_calls",
    "leak_dialects",
    "text_before_calls",
]

DIALECTS: tuple[str, ...] = (
    "harmony",
    "tool-call-tag",
    "function-tag",
    "mistral-tool-calls",
    "kimi-tool-calls",
    "think-brackets",
    "seed-think",
    "thought-tag",
    "gemma-channel",
    "dsml",
)
# The dialects whose markers always mean tool calls. A harmony reply holds one
# only when it has a `to=functions.NAME` message: has_text_tool_calls decides.
TOOL_CALL_DIALECTS: frozenset[str] = frozenset(
    ("tool-call-tag", "function-tag", "mistral-tool-calls", "kimi-tool-calls", "dsml")
)

# The literal markers of each dialect; every one starts with '<' or '[', which
# keeps re's search fast on prose. `<|channel>` (Gemma) is not `<|channel|>`.
_MARKERS: dict[str, tuple[str, ...]] = {
    "harmony": (
        "<|channel|>",
        "<|message|>",
        "<|start|>",
        "<|end|>",
        "<|call|>",
        "<|return|>",
        "<|constrain|>",
    ),
    "tool-call-tag": ("<tool_call>", "</tool_call>", "<arg_key>"),
    "function-tag": (),
    "mistral-tool-calls": ("[TOOL_CALLS]",),
    "kimi-tool-calls": (
        "<|tool_calls_section_begin|>",
        "<|tool_calls_section_end|>",
        "<|tool_call_begin|>",
        "<|tool_call_argument_begin|>",
    ),
    "think-brackets": ("[THINK]", "[/THINK]"),
    "seed-think": ("<seed:think>", "</seed:think>"),
    "thought-tag": ("<thought>", "</thought>"),
    "gemma-channel": ("<|channel>", "<channel|>"),
    "dsml": ("<\uff5cDSML\uff5c", "</\uff5cDSML\uff5c"),
}
_DIALECT_OF = {marker: name for name, markers in _MARKERS.items() for marker in markers}


def _trie(branches: list[tuple[str, str]]) -> str:
    """One regex for (literal, then pattern) branches, factored by shared prefixes.

    A flat alternation of two dozen markers that all start with '<' or '[' makes
    re try each of them at every '<' of a reply; factored, each character is
    looked at once per branch point, so a reply full of other tags stays cheap.
    """
    groups: dict[str, list[tuple[str, str]]] = {}
    ends: list[str] = []
    for literal, tail in branches:
        if literal:
            groups.setdefault(literal[0], []).append((literal[1:], tail))
        else:
            ends.append(tail)
    alternatives = [re.escape(c) + _trie(rest) for c, rest in groups.items()] + ends
    if len(alternatives) == 1:
        return alternatives[0]
    return "(?:" + "|".join(alternatives) + ")"


@cache
def _markers_of(names: frozenset[str]) -> re.Pattern[str]:
    """One search for the markers of every dialect in names."""
    branches = [(m, "") for name in DIALECTS if name in names for m in _MARKERS[name]]
    if "function-tag" in names:
        branches.append(("<function=", FUNCTION_TAG.removeprefix("<function=")))
    return re.compile(_trie(branches))


def leak_dialects(s: str) -> tuple[str, ...]:
    """Names of the leak dialects present in a reply's content, in DIALECTS order, each once."""
    if not isinstance(s, str):
        return ()
    found = _dialects_in(s)
    if found and ("`" in s or "~~~" in s):
        # Masking code only hides markers: it is needed only when some were found,
        # so a reply dense with fences and free of markers is not walked fence by fence.
        found = _dialects_in(mask_code(s))
    return tuple(name for name in DIALECTS if name in found)


def _dialects_in(masked: str) -> set[str]:
    """The dialects whose markers `masked` holds, read as it is (code already masked or not)."""
    # <think> tags are the commonest markup in a reply and no marker holds one: they go
    # first, each replaced by a NUL (which no marker holds either, so nothing new forms),
    # so that the search below stops at few '<'.
    masked = masked.replace("<think>", "\0").replace("</think>", "\0")
    found: set[str] = set()
    if STRIPPED_START.match(masked) or STRIPPED.search(masked) or RECIPIENT in masked:
        found.add("harmony")
    # A search per dialect found, each resuming where the last stopped: at most
    # len(DIALECTS) passes over any stretch, and one over a reply with none.
    pos = 0
    while len(found) < len(DIALECTS):
        m = _markers_of(frozenset(DIALECTS) - found).search(masked, pos)
        if m is None:
            break
        found.add(_DIALECT_OF.get(m.group(), "function-tag"))
        pos = m.start() + 1
    return found


def find_text_tool_calls(s: str, *, limit: int = 33) -> list[TextToolCall]:
    """Tool calls written as text in `s`, in order of appearance, at most `limit`.

    `s` is a reply's content after `strip_reasoning`. Calls inside the other
    dialects' reasoning blocks (an unclosed one runs to the end; text before a
    closer with no opener is reasoning too) and inside markdown code are not
    calls. A call whose name can be read but whose arguments cannot comes back
    with `error` set and `arguments` ""; a fragment with no readable name is
    skipped. The default limit is one more than the loop runs in one reply.
    """
    if not isinstance(s, str) or not isinstance(limit, int) or limit <= 0:
        return []
    return scan(s, limit, detect=False)[0]


# Where a call written as text can begin, in any recoverable dialect.
_CALL_OPENERS = re.compile(
    r"<tool_call>|<function=|\[TOOL_CALLS\]|<\|tool_calls_section_begin\|>|<\|tool_call_begin\|>"
    r"|<\|start\|>|<\|channel\|>|to=functions\."
)


def text_before_calls(s: str) -> str:
    """The prose before the first tool call written as text, trimmed; "" when it holds markup.

    What a tool parser would return as the content beside the calls it parsed.
    """
    found = _CALL_OPENERS.search(s)
    head = (s[: found.start()] if found else s).strip()
    return "" if leak_dialects(head) else head


def has_text_tool_calls(s: str) -> bool:
    """True when `s` holds a tool-call dialect (a marker of a TOOL_CALL_DIALECTS dialect,
    or a harmony commentary call).

    Markers inside code or inside reasoning blocks do not count, as in
    find_text_tool_calls; a marker with no readable call does.
    """
    if not isinstance(s, str):
        return False
    return scan(s, len(s) + 1, detect=True)[1]
