"""What the vLLM tier makes SmolLM2 write: `structured_outputs` that fix a reply exactly.

vLLM takes a request field `structured_outputs: {"regex" | "grammar" | "json" | "choice": ...}`
(rig_nb passes it through `extra_body`); the server's real hermes tool parser and deepseek_v3
reasoning parser then turn the forced text into what a client sees. The chat template
(tests/real/templates/hermes-reasoning.jinja) opens `<think>` in the generation prompt when
`chat_template_kwargs.thinking` is on, so a forced reasoning reply is `reasoning</think>answer`.
A regex spells `</think>` in pieces unless `logit_bias` makes the model take the single token
(id 13): vLLM's streaming reasoning parser only sees the token, its non-streamed one reads text.
"""

from __future__ import annotations

import json
import re
from typing import Any

from vllm_server import END_THINK_ID

from rig_nb import Tool

QUESTION = "What is 2 + 2?"
REASONING = "I add 2 and 2, which gives 4."
ANSWER = "The answer is 4."
WEATHER_PROMPT = "What is the weather in Paris?"
WEATHER_RESULT = "Paris: 18 C, clear"
CALL_ARGUMENTS = {"city": "Paris"}
CALL_TEXT = (
    "<tool_call>\n"
    + json.dumps({"name": "get_weather", "arguments": CALL_ARGUMENTS})
    + "\n</tool_call>"
)
THINK_TEXT = f"{REASONING}</think>\n\n{ANSWER}"


def weather_tool() -> Tool:
    return Tool(
        "get_weather",
        "Current weather for a city.",
        {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        lambda args: WEATHER_RESULT,
    )


def exactly(text: str) -> dict[str, Any]:
    """extra_body that makes the model write `text` and nothing else."""
    return {"structured_outputs": {"regex": re.escape(text)}}


def the_call() -> dict[str, Any]:
    """extra_body for a Hermes call of get_weather(city="Paris"), parsed by vLLM into tool_calls."""
    return exactly(CALL_TEXT)


def thought(bias: bool = True) -> dict[str, Any]:
    """extra_body for `reasoning</think>\\n\\nanswer` after a think block the template opened;
    with `bias`, `</think>` as its one token, which the streaming parser needs."""
    extra = exactly(THINK_TEXT)
    if bias:
        extra["logit_bias"] = {str(END_THINK_ID): 100}
    return extra
