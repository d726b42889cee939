"""Turn the SmolLM2-135M GGUF into the Hugging Face folder the vLLM tier serves.

Run by scripts/setup-vllm inside its vLLM venv (transformers, gguf, accelerate, torch):

    python gguf_to_hf.py GGUF TEMPLATE OUT

- The weights are read with transformers' GGUF loading, dequantized to float32, and saved as
  safetensors by a model built from the same config without its quantization config (a model
  that carries the GGUF quantizer cannot be saved, and vLLM would read the config's
  `quantization_config` as a quantization to apply).
- Four unused special tokens become `<think>`, `</think>`, `<tool_call>`, `</tool_call>`,
  their ids unchanged, and not special (as in Qwen's tokenizers): vLLM's reasoning and tool
  parsers look the tags up as single tokens, and the detokenizer must keep them in the text.
- TEMPLATE becomes the folder's chat_template.jinja.
Nothing is fetched: HF_HUB_OFFLINE is set before transformers is imported.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TQDM_DISABLE", "1")

# id -> (the name in SmolLM2's vocabulary, the new name). SmolLM2's chat never uses the
# Jupyter tokens.
RENAMED = {
    12: ("<jupyter_text>", "<think>"),
    13: ("<jupyter_code>", "</think>"),
    14: ("<jupyter_output>", "<tool_call>"),
    15: ("<jupyter_script>", "</tool_call>"),
}


def convert_weights(gguf: Path, out: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    quantized = AutoModelForCausalLM.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
    )
    config = quantized.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.dtype = torch.float32
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    plain.load_state_dict(quantized.state_dict(), strict=True)
    plain.save_pretrained(str(out))
    path = out / "config.json"
    saved = json.loads(path.read_text())
    saved.pop("_model_name_or_path", None)
    if "quantization_config" in saved:
        raise SystemExit("config.json still holds a quantization_config")
    path.write_text(json.dumps(saved, indent=2, sort_keys=True) + "\n")


def rename_tokens(out: Path) -> None:
    path = out / "tokenizer.json"
    tokenizer = json.loads(path.read_text())
    vocab = tokenizer["model"]["vocab"]
    added = {entry["id"]: entry for entry in tokenizer["added_tokens"]}
    for token_id, (old, new) in RENAMED.items():
        if vocab.get(old) != token_id or added.get(token_id, {}).get("content") != old:
            raise SystemExit(f"token {token_id} is not {old!r}: not the SmolLM2 vocabulary")
        if new in vocab:
            raise SystemExit(f"{new!r} is already in the vocabulary")
        del vocab[old]
        vocab[new] = token_id
        added[token_id]["content"] = new
        added[token_id]["special"] = False
    path.write_text(json.dumps(tokenizer, ensure_ascii=False, indent=2) + "\n")
    config_path = out / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    decoder = config.get("added_tokens_decoder", {})
    for token_id, (_, new) in RENAMED.items():
        if str(token_id) in decoder:
            decoder[str(token_id)].update(content=new, special=False)
    # The template lives in chat_template.jinja, not here.
    config.pop("chat_template", None)
    config.pop("local_files_only", None)
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


def check(out: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(out))
    for token_id, (_, new) in RENAMED.items():
        if tokenizer.encode(new, add_special_tokens=False) != [token_id]:
            raise SystemExit(f"{new!r} does not encode to the single token {token_id}")
        if tokenizer.decode([token_id], skip_special_tokens=True) != new:
            raise SystemExit(f"{new!r} is dropped by the detokenizer")
    tool = {
        "type": "function",
        "function": {"name": "ping", "description": "", "parameters": {"type": "object"}},
    }
    messages = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": "",
            "reasoning": "R",
            "tool_calls": [{"type": "function", "function": {"name": "ping", "arguments": {}}}],
        },
        {"role": "tool", "content": "pong"},
    ]
    text = tokenizer.apply_chat_template(
        messages, tools=[tool], add_generation_prompt=True, tokenize=False, thinking=True
    )
    for part in (
        "<tools>",
        '<tool_call>\n{"name": "ping", "arguments": {}}\n</tool_call>',
        "<think>\nR\n</think>",
        "<tool_response>\npong\n</tool_response>",
    ):
        if part not in text:
            raise SystemExit(f"the chat template does not render {part!r}:\n{text}")
    if not text.endswith("<|im_start|>assistant\n<think>\n"):
        raise SystemExit(f"thinking does not open the think block:\n{text}")


def main(argv: list[str]) -> None:
    if len(argv) != 3:
        raise SystemExit("usage: gguf_to_hf.py GGUF TEMPLATE OUT")
    gguf, template, out = (Path(a) for a in argv)
    out.mkdir(parents=True, exist_ok=True)
    convert_weights(gguf, out)
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    tokenizer.save_pretrained(str(out))
    rename_tokens(out)
    (out / "chat_template.jinja").write_text(template.read_text())
    check(out)


if __name__ == "__main__":
    main(sys.argv[1:])
