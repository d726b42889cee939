"""Reasoning across turns against llama.cpp's own llama-server under each family's real template.

For every family template that ships in the llama.cpp tree (models/templates/), one
llama-server at a time (SmolLM2 under that template, `--reasoning-format deepseek`):
- the turn the loop echoes after a tool call, with its reasoning replayed in each field
  (`reasoning_field` auto, `reasoning`, `thinking`, `content`) and not at all, rendered
  through `/apply-template` (no generation) and counted by the server's tokenizer
  (`/tokenize` of the rendered prompt): which field the family's template renders;
- the generation prompt with the thinking switch off (`reasoning_effort: "none"`,
  `chat_template_kwargs.enable_thinking: false`, each alone and as the loop maps it);
- the doctor's `reasoning_replay` and `thinking_switch` verdicts.
Then the same replay through a LiteLLM proxy: does it pass the field on?
tests/real/FINDINGS.md ("Reasoning across turns") records what was seen.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from client_view import apply_template_of
from llama_server_procs import (
    MODEL,
    TEMPLATE_FLAVOUR,
    ServerEnv,
    litellm_proxy,
    llama_server,
)

from rig_nb import Client, RunRequest, Tool
from rig_nb.capabilities.thinking import reasoning_replay_check, thinking_switch_check
from rig_nb.loop import run
from rig_nb.servers import profile
from rig_nb.testing import ScriptedBackend, chat_reply, tool_call

TIMEOUT_S = 120.0
# No generation is needed to see what renders; the thinking switch needs a few tokens only,
# so the server holds every reply to 16 (SmolLM2 never closes a think block by itself).
SERVER_ARGS = ("--reasoning-format", "deepseek", "--n-predict", "16")
MARK = "zebra quartz plan: fetch the Lisbon weather, then answer in one line"
FAMILIES = (
    "Qwen3.5-4B",
    "GLM-4.7-Flash",
    "MiniMax-M2",
    "deepseek-ai-DeepSeek-V3.1",
    "Kimi-K2-Thinking",
    "openai-gpt-oss-120b",
)
# reasoning_field setting -> what the loop was asked to do ("none": reasoning_replay="none").
SETTINGS = ("none", "auto", "reasoning", "thinking", "content")
SWITCHES: dict[str, dict[str, Any]] = {
    "default": {},
    "reasoning_effort none": {"reasoning_effort": "none"},
    "enable_thinking false": {"chat_template_kwargs": {"enable_thinking": False}},
}


def _weather(args: dict[str, Any]) -> str:
    return "Lisbon: 21 C, clear sky"


WEATHER = Tool(
    "get_weather",
    "Current weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    _weather,
)


def loop_body(setting: str) -> dict[str, Any]:
    """The second request the loop sends after a tool-call reply whose reasoning is MARK."""
    replies = [
        chat_reply(
            tool_calls=[tool_call("get_weather", {"city": "Lisbon"}, id="call_lisbon_1")],
            reasoning_content=MARK,
        ),
        chat_reply("done"),
    ]
    backend = ScriptedBackend(replies, server="llama.cpp")
    options: dict[str, Any] = (
        {"reasoning_replay": "none"} if setting == "none" else {"reasoning_field": setting}
    )
    request = RunRequest(
        MODEL, 1, prompt="What is the weather in Lisbon?", tools=(WEATHER,), **options
    )
    run(backend, request)
    return backend.bodies[1]


@dataclass
class Seen:
    """What one family's llama-server did with replayed reasoning and the switch."""

    rendered: dict[str, bool] = field(default_factory=dict)
    prompt_tokens: dict[str, int] = field(default_factory=dict)
    generation_prompt: dict[str, str] = field(default_factory=dict)
    replay_verdict: str = ""
    switch_verdict: str = ""
    switch_evidence: str = ""


SEEN: dict[str, Seen] = {}


def prompt_tokens(root_url: str, prompt: str) -> int:
    """The server's own token count of a rendered prompt (`/tokenize`, no evaluation)."""
    reply = httpx.post(f"{root_url}/tokenize", json={"content": prompt}, timeout=TIMEOUT_S)
    reply.raise_for_status()
    return len(reply.json()["tokens"])


def _tail(prompt: str, base: str) -> str:
    """What a rendered prompt adds after the conversation's common part."""
    i = 0
    while i < min(len(prompt), len(base)) and prompt[i] == base[i]:
        i += 1
    return prompt[i:]


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("reasoning-replay")


@pytest.fixture(scope="module", autouse=True)
def _report() -> Iterator[None]:
    yield
    for family, seen in SEEN.items():  # shown with -s: the source of FINDINGS.md
        print(f"\n{family}: {seen}")


RC, INLINE = "rendered via reasoning_content", {"auto", "content"}
# family -> (the loop's reasoning_field settings whose replayed reasoning /apply-template
# renders, the doctor's reasoning_replay, its thinking_switch), as seen here (FINDINGS.md).
# `auto` sends reasoning_content; `content` puts <think>...</think> back inline.
EXPECTED: dict[str, tuple[set[str], str, str]] = {
    "Qwen3.5-4B": (INLINE, RC, "honored"),
    "GLM-4.7-Flash": (INLINE, RC, "honored"),
    # Its generation prompt opens <think> whatever the switch says.
    "MiniMax-M2": (INLINE, RC, "ignored"),
    # Drops earlier reasoning: only the inline copy in content reaches the prompt.
    "deepseek-ai-DeepSeek-V3.1": ({"content"}, "ignored", "honored"),
    # Its generation prompt opens no think block: SmolLM2 reasons neither way.
    "Kimi-K2-Thinking": (INLINE, RC, "n/a"),
    # llama-server hands reasoning_content to the template's `thinking`; SmolLM2's output
    # with thinking off does not parse as harmony (500 "does not match the expected
    # peg-native format").
    "openai-gpt-oss-120b": (INLINE, RC, "error 500"),
}


@pytest.mark.parametrize("family", FAMILIES)
def test_each_family_template_renders_the_replayed_field(
    server_env: ServerEnv, logs: Path, family: str
) -> None:
    seen = SEEN.setdefault(family, Seen())
    name = f"{TEMPLATE_FLAVOUR}{family}"
    with llama_server(server_env, name, logs, SERVER_ARGS) as proc:
        with Client(proc.base_url, timeout=TIMEOUT_S) as client:
            assert client.server_kind == "llama.cpp"
            for setting in SETTINGS:
                body = loop_body(setting)
                prompt = apply_template_of(client, body)
                seen.rendered[setting] = MARK in prompt
                seen.prompt_tokens[setting] = prompt_tokens(proc.root_url, prompt)
            question = [{"role": "user", "content": "What is 17 * 23?"}]
            base = apply_template_of(client, {"messages": question, "add_generation_prompt": False})
            for label, fields in SWITCHES.items():
                prompt = apply_template_of(client, {"messages": question, **fields})
                seen.generation_prompt[label] = _tail(prompt, base)
            verdict, _, _ = reasoning_replay_check(client, MODEL, profile("llama.cpp"))
            seen.replay_verdict = verdict
            switch, why, _, _ = thinking_switch_check(client, MODEL, profile("llama.cpp"))
            seen.switch_verdict, seen.switch_evidence = switch, why
    # Replay off renders no reasoning; where a field renders, the server counts it.
    assert seen.rendered["none"] is False
    for setting in SETTINGS[1:]:
        more = seen.prompt_tokens[setting] > seen.prompt_tokens["none"]
        assert more is seen.rendered[setting], (setting, seen)
    assert seen.replay_verdict in {
        "rendered via reasoning_content",
        "rendered via reasoning",
        "rendered via thinking",
        "ignored",
    }
    fields, verdict, switch = EXPECTED[family]
    assert {s for s, shown in seen.rendered.items() if shown} == fields
    assert (seen.replay_verdict, seen.switch_verdict) == (verdict, switch)


def test_litellm_passes_the_replayed_field_on(server_env: ServerEnv, logs: Path) -> None:
    name = f"{TEMPLATE_FLAVOUR}Qwen3.5-4B"
    with llama_server(server_env, name, logs, SERVER_ARGS) as upstream:
        with (
            Client(upstream.base_url, timeout=TIMEOUT_S) as direct,
            litellm_proxy(server_env, [upstream], logs) as proxy,
            Client(proxy.base_url, proxy.api_key or "", timeout=TIMEOUT_S) as via,
        ):
            # The proxy's model list says owned_by "openai" and its GET carries no
            # x-litellm header: one GET knows it by LiteLLM's creation time.
            assert via.server_kind == "litellm"
            counts = {
                s: prompt_tokens(upstream.root_url, apply_template_of(direct, loop_body(s)))
                for s in ("none", "auto", "reasoning")
            }
            # Through the proxy the doctor can only count: three one-token completions.
            verdict, evidence, _ = reasoning_replay_check(
                via, proxy.models[upstream.name], profile("litellm")
            )
    print(f"\nLiteLLM: direct prompt tokens {counts}; reasoning_replay {verdict} ({evidence})")
    SEEN.setdefault("litellm", Seen()).replay_verdict = verdict
    assert counts["auto"] > counts["none"] == counts["reasoning"]
    # LiteLLM's openai/ provider passes reasoning_content on to llama-server.
    assert verdict == "rendered via reasoning_content"
