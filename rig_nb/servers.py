"""Which server answers: the kinds rig_nb names, and the guess from what an endpoint shows.

Below both the HTTP backend (`server_kind`, found once) and the doctor (`EndpointReport.server`):
the model list's owners and headers, a reply's top-level fields and fingerprint, and
LiteLLM's creation time.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .wire import Reply

__all__ = ["SERVER_KINDS", "Models", "guess_server", "server_of_models"]

# Every server kind the doctor names; "unknown" gets the generic mapping.
SERVER_KINDS = (
    "llama.cpp",
    "vllm",
    "ollama",
    "lm-studio",
    "sglang",
    "litellm",
    "openai",
    "unknown",
)


@dataclass
class Models:
    """An endpoint's model list and the response headers that name the server."""

    items: list[dict[str, Any]] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)


_LLAMA_FINGERPRINT = re.compile(r"^b\d+-[0-9a-f]+")
# LiteLLM's proxy lists every model with this `created` (its DEFAULT_MODEL_CREATED_AT_TIME)
# and owned_by the provider ("openai" for its openai/ provider), and sends no x-litellm
# header with the list. OpenAI gives that time to gpt-3.5-turbo alone.
_LITELLM_CREATED = 1677610602
_OWNERS = {
    "llamacpp": "llama.cpp",
    "me": "llama.cpp",  # llama-cpp-python's server
    "vllm": "vllm",
    "library": "ollama",
    "ollama": "ollama",
    "organization_owner": "lm-studio",
    "sglang": "sglang",
    "litellm": "litellm",
    "system": "openai",
    "openai": "openai",
    "openai-internal": "openai",
}


def guess_server(
    owned_by: str, reply: Reply | None, headers: Mapping[str, str] | None = None
) -> str:
    """The server kind from the model list's owned_by and what a reply (or, without one,
    a response's `headers`) carried."""
    if headers is None:
        headers = reply.headers if reply is not None else {}
    if any(k.startswith("x-litellm") for k in headers):
        return "litellm"
    if reply is not None and (
        "timings" in reply.top_level or _LLAMA_FINGERPRINT.match(reply.system_fingerprint)
    ):
        return "llama.cpp"
    if "llama.cpp" in headers.get("server", "").lower():
        return "llama.cpp"
    kind = _OWNERS.get(owned_by.strip().lower(), "")
    if kind:
        return kind
    if reply is not None and reply.system_fingerprint.startswith("fp_"):
        return "openai"
    return "unknown"


def server_of_models(models: Models) -> str:
    """The server kind from a model list alone (`Client.server_kind`): its owners, headers and
    LiteLLM's creation time."""
    items = models.items
    if (
        items
        and all(m.get("created") == _LITELLM_CREATED for m in items)
        and any(m.get("id") != "gpt-3.5-turbo" for m in items)
    ):
        return "litellm"
    for m in items:
        owner = m.get("owned_by")
        kind = guess_server(owner if isinstance(owner, str) else "", None, models.headers)
        if kind != "unknown":
            return kind
    return guess_server("", None, models.headers)
