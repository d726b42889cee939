"""Every family's own call markup through its real chat template in llama.cpp's llama-server.

For each template of the llama.cpp tree named in DESIGN ("Dialects of every family"),
one llama-server at a time serves SmolLM2 under it (`template:NAME`, `--jinja`), and
the family's call markup (read from the template) is forced two ways:
- parser off: a request grammar forces the markup; llama-server takes a grammar beside
  tools only with tool_choice "none", where its parser reads plain content, so the
  reply's content is the RAW markup (and `parse_tool_calls: false` is sent too, as its
  README has it). rig_nb must name it (leak_dialects) and recover it
  (find_text_tool_calls) to the call the grammar wrote;
- parser on: the loop's first turn is prefilled with the markup (an assistant message
  last: llama-server continues it and parses prefill and output together) and the
  model's end-of-turn token is biased up, so the output is the markup and nothing
  else; tool_choice "auto", the server's own parser. A native call the loop runs,
  whose result goes back through the family's template on the second turn; or, where
  the server's parser does not read its family's markup, a finding: the loop and the
  doctor's rules say the call came as text.
  Cohere2MoE's raw markup is read from a second server with `--skip-chat-parsing`
  (DESIGN saw its parser answer 500 to forced calls).
tests/real/FINDINGS.md ("Every family's own markup") has the raw markup per family.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from grammars import gbnf_literal
from llama_server_procs import MODEL, TEMPLATE_FLAVOUR, Proc, ServerEnv, llama_server

from rig_nb import Client, RunRequest, Tool, find_text_tool_calls, leak_dialects
from rig_nb.backend import Backend, Models
from rig_nb.capabilities.advice import advice
from rig_nb.content import text_for_calls
from rig_nb.dialects import has_text_tool_calls
from rig_nb.loop import markup_in_call, run_trace
from rig_nb.probe import probe_trace
from rig_nb.wire import Reader, Reply, Request, Turn

TIMEOUT_S = 300.0
ON_TOKENS = 8  # each turn's output is the end-of-turn token (END_OF_TURN)
# SmolLM2's <|im_end|>, biased so far up that the model's first token ends the turn.
END_OF_TURN = [[2, 100]]
ANSWER = "It is 12:00 in Paris."
ARGUMENTS = {"city": "Paris"}
SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "description": "a city"}},
    "required": ["city"],
}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "The time in a city.",
            "parameters": SCHEMA,
        },
    }
]
MESSAGES = [{"role": "user", "content": "What time is it in Paris?"}]
BAR, SEP = "\uff5c", "\u2581"
D = "]<]minimax[>["


def _ds(word: str) -> str:
    return f"<{BAR}{word.replace('_', SEP)}{BAR}>"


@dataclass(frozen=True)
class Family:
    template: str
    markup: str  # the call as the template renders an assistant tool call
    dialect: str  # the leak dialect rig_nb names it by
    # Parser on (the markup prefilled, tool_choice "auto"): "call" when the server's
    # parser returns it as a native call; "text" when it hands the markup back as content.
    native: str
    extra: dict[str, Any]  # request fields the family needs with the server's own grammar
    # What the forced output starts with: templates that open <think> in the generation
    # prompt need it closed first; harmony's output starts with its own channel token.
    prefix: str = "Checking.</think>\n\n"
    # Parser off: "parse_tool_calls" (a request field) or "skip-chat-parsing" (a server flag,
    # for a family whose parser refuses the forced markup even with parse_tool_calls false).
    off: str = "parse_tool_calls"


FAMILIES = {
    "MiniMax-M2": Family(
        "MiniMax-M2",
        '<minimax:tool_call>\n<invoke name="get_time">\n<parameter name="city">Paris</parameter>\n'
        "</invoke>\n</minimax:tool_call>",
        "minimax-tool-calls",
        "call",
        {},
    ),
    "MiniMax-M3": Family(
        "MiniMax-M3",
        f'{D}<tool_call>\n{D}<invoke name="get_time">{D}<city>Paris{D}</city>{D}</invoke>\n'
        f"{D}</tool_call>",
        "minimax-tool-calls",
        "call",
        {},
        "Checking.</mm:think>\n\n",
    ),
    "Gemma 4": Family(
        "google-gemma-4-31B-it",
        '<|tool_call>call:get_time{city:<|"|>Paris<|"|>}<tool_call|>',
        "gemma-tool-call",
        "call",
        {"parallel_tool_calls": False},
    ),
    "DeepSeek V3.1": Family(
        "deepseek-ai-DeepSeek-V3.1",
        _ds("tool_calls_begin")
        + _ds("tool_call_begin")
        + "get_time"
        + _ds("tool_sep")
        + json.dumps(ARGUMENTS)
        + _ds("tool_call_end")
        + _ds("tool_calls_end"),
        "deepseek-tool-calls",
        "call",
        {},
    ),  # fmt: skip
    "DeepSeek V3.2": Family(
        "deepseek-ai-DeepSeek-V3.2",
        f'<{BAR}DSML{BAR}function_calls>\n<{BAR}DSML{BAR}invoke name="get_time">\n'
        f'<{BAR}DSML{BAR}parameter name="city" string="true">Paris</{BAR}DSML{BAR}parameter>\n'
        f"</{BAR}DSML{BAR}invoke>\n</{BAR}DSML{BAR}function_calls>",
        "dsml",
        "call",
        {},
    ),
    "Kimi-K2-Thinking": Family(
        "Kimi-K2-Thinking",
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_time:0"
        '<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>',
        "kimi-tool-calls",
        "call",
        {},
    ),
    "GLM-4.7": Family(
        "GLM-4.7-Flash",
        "<tool_call>get_time<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>",
        "tool-call-tag",
        "call",
        {},
    ),
    "gpt-oss": Family(
        "openai-gpt-oss-120b",
        '<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{"city": "Paris"}'
        "<|call|>",
        "harmony",
        "text",
        {},
        "",
    ),
    "Qwen3.5": Family(
        "Qwen3.5-4B",
        "<tool_call>\n<function=get_time>\n<parameter=city>\nParis\n</parameter>\n</function>\n"
        "</tool_call>",
        "tool-call-tag",
        "call",
        {},
    ),
    "Qwen3-Coder": Family(
        "Qwen3-Coder",
        "<tool_call>\n<function=get_time>\n<parameter=city>\nParis\n</parameter>\n</function>\n"
        "</tool_call>",
        "tool-call-tag",
        "call",
        {},
    ),
    "Ministral 3": Family(
        "mistralai-Ministral-3-14B-Reasoning-2512",
        '[TOOL_CALLS]get_time[ARGS]{"city": "Paris"}',
        "mistral-tool-calls",
        "call",
        {},
    ),
    "Cohere2MoE": Family(
        "Cohere2MoE",
        '<|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": "get_time", "parameters": '
        '{"city": "Paris"}}\n]<|END_ACTION|>',
        "cohere-markers",
        "text",
        {},
        off="skip-chat-parsing",
    ),
    "Seed-OSS": Family(
        "ByteDance-Seed-OSS",
        "<seed:tool_call>\n<function=get_time>\n<parameter=city>Paris</parameter>\n</function>\n"
        "</seed:tool_call>",
        "function-tag",
        "call",
        {},
    ),
}
# Families whose raw markup rig_nb names and detects but does not read (DESIGN lists the
# dialects recovery reads): the loop ends such a turn `text_tool_calls`, not in an answer.
DETECTED_ONLY = {"Cohere2MoE"}


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("family-templates")


@pytest.fixture(scope="module", params=list(FAMILIES))
def family_server(
    request: pytest.FixtureRequest, server_env: ServerEnv, logs: Path
) -> Iterator[tuple[Family, Proc]]:
    """One family's server at a time (module scope, parametrized: pytest groups by family)."""
    family = FAMILIES[request.param]
    with llama_server(server_env, f"{TEMPLATE_FLAVOUR}{family.template}", logs) as proc:
        yield family, proc


def _post(proc: Proc, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{proc.base_url}/chat/completions", json=body, timeout=TIMEOUT_S)


def raw_markup(family: Family, proc: Proc) -> str:
    """The content of a reply whose output the grammar fixes to the family's call markup."""
    body = {
        "model": MODEL,
        "messages": MESSAGES,
        "tools": TOOLS,
        "tool_choice": "none",
        "parse_tool_calls": False,
        "grammar": gbnf_literal(family.prefix + family.markup),
        "max_tokens": 400,
    }
    reply = _post(proc, body)
    assert reply.status_code == 200, reply.text
    message = reply.json()["choices"][0]["message"]
    assert not message.get("tool_calls")
    content: str = message.get("content") or ""
    return content


def test_parser_off_gives_the_raw_markup_named_and_recovered(
    family_server: tuple[Family, Proc], server_env: ServerEnv, logs: Path
) -> None:
    family, proc = family_server
    if family.off == "skip-chat-parsing":
        name = f"{TEMPLATE_FLAVOUR}{family.template}"
        with llama_server(server_env, name, logs, ("--skip-chat-parsing",)) as skipping:
            content = raw_markup(family, skipping)
    else:
        content = raw_markup(family, proc)
    FINDINGS.setdefault(family.template, {})["raw"] = content
    assert family.markup in content
    assert family.dialect in leak_dialects(content)
    text = text_for_calls(content)
    assert has_text_tool_calls(text)
    calls = find_text_tool_calls(text, TOOLS)
    if family.template in {FAMILIES[k].template for k in DETECTED_ONLY}:
        assert calls == []
        return
    assert [(c.name, json.loads(c.arguments), c.error) for c in calls] == [
        ("get_time", ARGUMENTS, "")
    ]


def _tool(seen: list[dict[str, Any]]) -> Tool:
    def run(args: dict[str, Any]) -> str:
        seen.append(args)
        return "12:00"

    return Tool("get_time", "The time in a city.", SCHEMA, run)


class Prefilled:
    """A Backend over a Client whose turns the model continues from a prefill (an
    assistant message last, as llama-server's README has it) and ends at its first token
    (END_OF_TURN): the first turn from the family's call markup, a turn after a tool
    result from an answer. What the server parses is what a model of that family
    writes, through the server's own parser."""

    def __init__(self, client: Client, prefix: str, markup: str) -> None:
        self.client, self.prefix, self.markup = client, prefix, markup
        self.endpoint, self.redact, self.wire = client.endpoint, client.redact, client.wire

    @property
    def api(self) -> str:
        return self.client.api

    @property
    def server_kind(self) -> str:
        return self.client.server_kind

    def _prefilled(self, request: Request) -> Request:
        after_result = request.turns[-1].role == "tool"
        prefill = self.prefix + (ANSWER if after_result else self.markup)
        turns = (*request.turns, Turn("assistant", prefill))
        extra = {**request.extra, "logit_bias": END_OF_TURN}
        return dataclasses.replace(request, turns=turns, extra=extra)

    def chat(self, request: Request, *, retries: bool = True) -> Reply:
        return self.client.chat(self._prefilled(request), retries=retries)

    def reader(self) -> Reader:
        return self.client.reader()

    def stream(
        self,
        request: Request,
        reader: Reader,
        *,
        on_event: Callable[[bool], None] | None = None,
        retries: bool = True,
    ) -> Reply:
        return self.client.stream(
            self._prefilled(request), reader, on_event=on_event, retries=retries
        )

    def over(self, api: str) -> Backend:
        return Prefilled(self.client.over(api), self.prefix, self.markup)

    def server_route(self, path: str, body: Mapping[str, Any] | None = None) -> bytes:
        return self.client.server_route(path, body)

    def list_models(self) -> Models:
        return self.client.list_models()


STREAMS = pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])


@STREAMS
def test_parser_on_the_family_markup_is_a_native_call_the_loop_runs(
    family_server: tuple[Family, Proc], stream: bool
) -> None:
    """The server's parser reads the family's markup: a clean native call, run by the
    loop, whose call and result the family's template renders on the second turn, which
    ends in the answer (outcome "ok"). Where the
    server hands the markup back as content instead (FAMILIES: "text"), the loop names
    it, ends the turn `text_tool_calls` and runs nothing; the probe (the doctor's
    tool_choice_auto row) says "text", and the doctor's advice for the text_tool_calls
    check names the llama-server fix."""
    family, proc = family_server
    seen: list[dict[str, Any]] = []
    with Client(proc.base_url, timeout=TIMEOUT_S, server="llama.cpp") as client:
        backend = Prefilled(client, family.prefix, family.markup)
        request = RunRequest(
            model=MODEL,
            max_tokens=ON_TOKENS,
            prompt=MESSAGES[0]["content"],
            tools=[_tool(seen)],
            max_iterations=2,
            stream=stream,
            extra_body=family.extra,
        )
        trace = run_trace(backend, request)
        probe = probe_trace(backend, MODEL) if family.native == "text" else None
    first = trace.iterations[0]
    FINDINGS.setdefault(family.template, {})[f"native {stream=}"] = (
        f"content {first.raw_content[:200]!r}, reasoning {first.reasoning_content[:80]!r}, "
        f"calls {[(c.name, c.arguments[:80], c.id) for c in first.tool_calls]}, "
        f"error {first.error[:200]!r}"
    )
    assert first.error == "", FINDINGS[family.template]
    if family.native == "text":
        assert (first.tool_calls, seen, first.ending) == ([], [], "text_tool_calls")
        assert family.markup in first.raw_content
        assert family.dialect in first.leaks
        assert probe is not None and probe.ending == "text_tool_calls"
        assert probe.outcome == "NoToolCallingError"
        fix = advice("llama.cpp", "text_tool_calls", family.dialect, auto="text")
        assert "--jinja" in fix and "recover_text_tool_calls=True" in fix
        return
    assert first.ending == "tool_calls", FINDINGS[family.template]
    (rec,) = first.tool_calls
    assert (rec.source, rec.name, json.loads(rec.arguments)) == ("native", "get_time", ARGUMENTS)
    assert markup_in_call(rec.name, rec.arguments) == ""
    assert seen == [ARGUMENTS]
    second = trace.iterations[1]
    assert any(m.get("role") == "tool" for m in second.messages)
    if "</mm:think>" in family.prefix:
        # Not the unopened `</think>` the seed's content rules take as reasoning: the
        # prefill's text stays in the answer, and the run ends "leaked", naming it.
        expected = ("leaked", "answer", "the answer holds minimax-think markup")
    else:
        expected = ("ok", "answer", "")
    assert (trace.outcome, second.ending, second.error) == expected, second
    assert ANSWER in second.text


FINDINGS: dict[str, dict[str, str]] = {}


def teardown_module() -> None:
    for template, seen in FINDINGS.items():
        print(f"\n{template}: {json.dumps(seen)[:600]}")
