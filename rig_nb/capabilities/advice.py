"""What to change on the server, keyed by server kind and check: the doctor's advice table.

Each entry is one line naming the server-side fix reported for that symptom.
`advice(server, check, verdict, auto=...)` picks the entry for the guessed server
kind, else the generic one ("" when no fix is known). Advice agrees with the other
verdicts: "keep tool_choice auto" only when "auto" got a tool call, and a check
that got no reply to judge (`error ...`, `n/a`) gets none.
"""

from __future__ import annotations

from ..dialects import TOOL_CALL_DIALECTS

__all__ = ["SERVER_KINDS", "advice", "by_server"]

SERVER_KINDS = ("llama.cpp", "vllm", "ollama", "lm-studio", "sglang", "litellm", "openai")
# Leak dialects that are tool-call markup: their fix is the server's tool-call parser.
_TOOL_CALL_MARKUP = TOOL_CALL_DIALECTS

# A native call whose name or keys hold the model's markup: the server's parser failed
# on the family's own format (seen with GLM, whose <arg_key> ended up in names).
_NATIVE_MARKUP = {
    "vllm": "the server's tool-call parser misread this family's call markup: pick the "
    "--tool-call-parser made for the model (glm45, qwen3_coder, minimax_m2, kimi_k2, ...) and "
    "update vLLM; rig_nb feeds such calls back as errors instead of running them",
    "llama.cpp": "llama-server's parser misread this family's call markup: run with --jinja and "
    "the model's own chat template (--chat-template-file) and update llama.cpp; rig_nb feeds "
    "such calls back as errors instead of running them",
    "": "the server's tool-call parser misread this family's call markup (markup in a tool "
    "name or argument name): use the parser made for the model and update the server; rig_nb "
    "feeds such calls back as errors instead of running them",
}

_NO_TOOL_CALLS = {
    "vllm": "start vLLM with --enable-auto-tool-choice --tool-call-parser <parser for the model> "
    "(hermes for Qwen and Hermes, mistral, llama3_json, openai for gpt-oss, ...)",
    "llama.cpp": "start llama-server with --jinja, and a chat template with tool support "
    "(--chat-template-file, e.g. models/templates/ in the llama.cpp tree) if the model's lacks it",
    "ollama": "use a model whose template supports tools (`ollama show --template MODEL` shows "
    "`.Tools`); update Ollama for the model's tool parser",
    "lm-studio": "load a model whose template supports tool use (LM Studio marks them with a "
    "hammer) and keep the OpenAI-compatible server's tool parsing on",
    "sglang": "start SGLang with --tool-call-parser <parser for the model>",
    "litellm": "fix tool calling on the server behind the proxy; LiteLLM passes tool_calls "
    "through as the backend sends them",
    "": "enable the server's tool-call parser for this model (vLLM --enable-auto-tool-choice "
    "--tool-call-parser, llama.cpp --jinja, a tool-capable chat template)",
}
_REASONING_IN_CONTENT = {
    "vllm": "start vLLM with --reasoning-parser <parser for the model> (deepseek_r1, qwen3, "
    "openai_gptoss, ...) so reasoning moves to the reasoning field",
    "llama.cpp": "start llama-server with --jinja --reasoning-format deepseek (or send "
    '"reasoning_format": "deepseek" per request); do not use --skip-chat-parsing',
    "ollama": 'send "think": true (or a level for gpt-oss) and update Ollama: it then puts the '
    "reasoning in the `reasoning` field",
    "lm-studio": "turn on 'separate reasoning_content in API responses' in LM Studio's developer "
    "settings",
    "sglang": "start SGLang with --reasoning-parser <parser for the model>",
    "litellm": "parse reasoning on the server behind the proxy (vLLM --reasoning-parser, "
    "llama-server --reasoning-format deepseek): LiteLLM splits a leading <think> block only "
    "in non-streamed replies",
    "": "enable the server's reasoning parser (vLLM --reasoning-parser, llama.cpp "
    "--reasoning-format deepseek, SGLang --reasoning-parser)",
}
_HARMONY = {
    "vllm": "serve gpt-oss with vLLM's harmony support (--reasoning-parser openai_gptoss "
    "--tool-call-parser openai --enable-auto-tool-choice)",
    "llama.cpp": "start llama-server with --jinja and gpt-oss's own chat template",
    "": "the server does not parse gpt-oss's harmony format: use a server version and chat "
    "template that do (vLLM's openai_gptoss parser, llama.cpp --jinja)",
}
_STREAM_PARITY = {
    "litellm": "LiteLLM rewrites non-streamed replies (a content that starts with a <think> "
    "block becomes content plus reasoning_content) but not streamed ones: parse reasoning on "
    "the backend "
    "(llama-server --reasoning-format deepseek, vLLM --reasoning-parser) so both paths agree",
    "": "the streamed and non-streamed paths of this server differ: check the server's "
    "streaming parser, and run the loop the way it will run in production",
}
_STREAM_GRAMMAR = {
    "ollama": "Ollama's OpenAI-compatible stream breaks its grammar: tool call fragments "
    "without index were fixed in Ollama 0.4.7 (ollama/ollama#7881), one index for every call "
    "is ollama/ollama#15457: upgrade Ollama; rig_nb forgave these, the openai SDK's stream "
    "helpers may not",
    "litellm": "the proxy's stream breaks its grammar: check the backend's own stream, then "
    "upgrade LiteLLM if only the proxy's stream has the faults; rig_nb forgave them, the openai "
    "SDK's stream helpers may not",
    "": "the server (or a proxy in front of it) streams what its wire's grammar does not allow: "
    "upgrade it and report the faults upstream; rig_nb forgave them, the openai SDK's stream "
    "helpers and other clients may not",
}
_REQUIRED = {
    "": 'this endpoint rejects tool_choice "required": send "auto" (the loop\'s default)',
}
_UNSET = {
    "": 'this endpoint only calls tools when tool_choice is sent: keep tool_choice "auto" '
    "(the loop's default)",
}
_USAGE = {
    "": "the endpoint reports no token usage: token columns stay empty (for streams the loop "
    "asks for it with stream_options.include_usage)",
}
_REASONING_TOKENS = {
    "vllm": "vLLM reports reasoning_tokens only in recent versions: upgrade to count the "
    "reasoning budget",
    "llama.cpp": "llama-server does not report reasoning_tokens (ggml-org/llama.cpp#27971): "
    "the reasoning budget is not counted separately",
    "": "the endpoint does not report completion_tokens_details.reasoning_tokens, so the "
    "share of the budget spent thinking is unknown",
}
# Requests that wait for each other: the server's parallel slots or batch size.
_PARALLEL = {
    "llama.cpp": "llama-server runs -np N requests at once (--parallel; each slot gets "
    "ctx-size/N of the context, so raise -c with it); with -np 1 every agent waits its turn",
    "vllm": "vLLM batches at most --max-num-seqs sequences (and --max-num-batched-tokens per "
    "step): raise them if requests queue, within the KV-cache memory",
    "ollama": "Ollama serves OLLAMA_NUM_PARALLEL requests per model at once (set it on the "
    "server, with OLLAMA_MAX_QUEUE); each parallel slot takes its own context memory",
    "sglang": "SGLang runs at most --max-running-requests at once: raise it if requests queue",
    "litellm": "LiteLLM passes the load to the server behind it: raise its parallelism there "
    "(llama-server -np, vLLM --max-num-seqs, OLLAMA_NUM_PARALLEL) and check the proxy's "
    "max_parallel_requests",
    "": "the server runs fewer requests at once than were sent: raise its parallelism "
    "(llama-server -np, vLLM --max-num-seqs, OLLAMA_NUM_PARALLEL)",
}
_RATE_LIMITED = {
    "litellm": "the proxy refused requests under load: raise its rpm/tpm or "
    "max_parallel_requests for this model, or send fewer at once (compare's load)",
    "": "the endpoint (or a proxy in front of it) refused requests under load: raise its rate "
    "or parallel-request limit, or send fewer at once (compare's load)",
}
_CROSSED = {
    "vllm": "vLLM's tool-call parser mixed concurrent requests (vllm-project/vllm#48089, "
    "PR#49249): update vLLM; until then --max-num-seqs 1 keeps streams apart",
    "llama.cpp": "llama-server mixed concurrent requests' replies: update llama.cpp; until then "
    "-np 1 keeps streams apart",
    "ollama": "Ollama mixed concurrent requests' replies: update Ollama; until then "
    "OLLAMA_NUM_PARALLEL=1 keeps streams apart",
    "": "the server mixed concurrent requests' tool calls (a parser with state shared across "
    "requests: vllm-project/vllm#48089, ml-explore/mlx-lm#965): update it, or serve one "
    "request at a time (llama-server -np 1, vLLM --max-num-seqs 1, OLLAMA_NUM_PARALLEL=1)",
}


_LENGTH = (
    "inconclusive: the probe's 256-token budget ran out before any tool call, often inside "
    "the reasoning; lower the reasoning effort (reasoning_effort, a thinking switch) or check "
    "with a larger budget"
)


def by_server(table: dict[str, str], server: str) -> str:
    """The entry of `table` for `server`, else its "" entry (any server kind)."""
    return table.get(server, table[""])


def advice(server: str, check: str, verdict: str, *, auto: str) -> str:
    """The server-side fix for a check's verdict, or "" when the verdict needs none.

    `auto` is the verdict of tool_choice_auto: the advice to rely on "auto" holds only
    when it is "tool call" (else the auto row names the fix).
    """
    if check.startswith("tool_choice_") and verdict == "length":
        return _LENGTH
    if check.startswith("tool_choice_") and verdict == "call in reasoning":
        return by_server(_NATIVE_MARKUP, server).replace(
            "misread this family's call markup", "left this family's call in the reasoning"
        )
    if check == "tool_choice_auto" and verdict == "text":
        return by_server(_NO_TOOL_CALLS, server)
    if check == "tool_choice_unset" and verdict == "text":
        return by_server(_UNSET, server) if auto == "tool call" else ""
    if check == "tool_choice_required" and verdict.startswith("error"):
        return by_server(_REQUIRED, server) if auto == "tool call" else ""
    if check == "concurrency":  # before the rule below: "errors under load" has advice
        return _concurrency(server, verdict)
    if verdict.startswith("error") or verdict == "n/a":
        return ""
    if check == "reasoning_location" and verdict.startswith("content:"):
        return by_server(_REASONING_IN_CONTENT, server)
    found = set(verdict.split(","))
    if check == "leak_dialects" and "harmony" in found:
        return by_server(_HARMONY, server)
    if check == "leak_dialects" and found & _TOOL_CALL_MARKUP:
        return by_server(_NO_TOOL_CALLS, server)
    if check == "leak_dialects" and verdict not in ("no", ""):
        return by_server(_REASONING_IN_CONTENT, server)
    if check == "text_tool_calls" and verdict not in ("no", ""):
        fix = by_server(_NO_TOOL_CALLS, server)
        return f"{fix}; meanwhile RunRequest(recover_text_tool_calls=True) runs such calls"
    if check == "native_call_hygiene" and verdict.startswith("markup"):
        return by_server(_NATIVE_MARKUP, server)
    if check == "native_call_hygiene" and verdict == "empty arguments":
        return by_server(_NO_TOOL_CALLS, server)
    if check == "stream_parity" and verdict.startswith("differs"):
        return by_server(_STREAM_PARITY, server)
    if check == "stream_grammar" and verdict.startswith("faults"):
        return by_server(_STREAM_GRAMMAR, server)
    if check == "usage_reported" and verdict == "no":
        return by_server(_USAGE, server)
    if check == "reasoning_tokens_reported" and verdict == "no":
        return by_server(_REASONING_TOKENS, server)
    return ""


def _concurrency(server: str, verdict: str) -> str:
    if verdict == "crossed":
        return by_server(_CROSSED, server)
    if verdict.startswith("errors under load"):
        limited = "429" in verdict or "503" in verdict
        return by_server(_RATE_LIMITED if limited else _PARALLEL, server)
    if verdict.startswith(("serialized", "partly parallel")):
        return by_server(_PARALLEL, server)
    return ""
