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
- Round 3 names every family's special markup: ``minimax-tool-calls``,
  ``gemma-tool-call``, ``deepseek-tool-calls``, ``cohere-markers``, ``lfm-tool-calls``,
  ``minimax-think``, ``kimi-think``, ``kimi-k3-markers``, ``minicpm-function``,
  ``gigachat-markers``, ``nemotron-toolcall``, ``apriel-markers``, ``apertus-tool-calls``
  (markers.py; examples from shared/peer-cases, llama.cpp's tests/test-chat.cpp).
- ``dsml`` (DeepSeek V3.2): ``<\\uff5cDSML\\uff5cfunction_calls>\\n<\\uff5cDSML\\uff5cinvoke
  name="get_weather">...`` with U+FF5C fullwidth bars (vLLM's deepseekv32 tool parser).

Markers inside closed fenced code blocks, indented code blocks or inline code
spans are quoted, not leaked (`code.py`; in a reply of at most 10,000 backticks and tildes);
markers anywhere else count, JSON strings included. The
token-stripped harmony remains are ``analysis`` glued to a capital letter at the
start of the reply, ``assistant`` glued to a channel name (``assistantfinal``,
``assistantcommentary``, ``assistantanalysis``), or a ``to=functions.`` recipient:
English writes none of them. GLM's ``<arg_key>`` counts as ``tool-call-tag`` (its
``<tool_call>`` is a special token a server may strip).

Calls are read from tool-call-tag (JSON, GLM and Qwen3-Coder bodies),
function-tag, mistral-tool-calls, kimi-tool-calls, harmony messages with a
`to=functions.NAME` recipient on any channel, dsml, and the families of
`families.py` (MiniMax, Gemma 4, DeepSeek V3/R1/V3.1); token-stripped harmony
calls and the other families' call markup (LFM2, Cohere, Nemotron v2, Apertus,
MiniCPM5, GigaChat, Kimi-K3) are named and detected, not read. Parameter values
of the XML-like dialects take the declared tool's schema type. Nothing is
read from reasoning: the other dialects' blocks (a call opener ends an unclosed
one), harmony analysis messages without a recipient, and everything before a
reasoning closer with no opener (the rule strip_reasoning applies to
``</think>``), a closer inside a call's arguments included (`scan.py`).

Every function here is linear in the reply's length on any input and never
raises: a reply is chosen by the endpoint, and fits a 1 MiB response cap.
"""

from __future__ import annotations

from .calls import TextToolCall
from .markers import DIALECTS, TOOL_CALL_DIALECTS, leak_dialects, text_before_calls
from .scan import find_text_tool_calls, has_text_tool_calls

__all__ = [
    "DIALECTS",
    "TOOL_CALL_DIALECTS",
    "TextToolCall",
    "find_text_tool_calls",
    "has_text_tool_calls",
    "leak_dialects",
    "text_before_calls",
]
