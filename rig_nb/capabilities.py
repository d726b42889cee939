"""What an endpoint does with each tool_choice setting.

Real servers differ here in ways that decide whether a loop works at all: a
llama.cpp server with SmolLM2 answers in text when tool_choice is unset, makes
a real tool call with "auto", and fails with HTTP 500 on "required". One probe
per setting shows it::

    >>> tool_choice_matrix(client, "smollm2")
    {'unset': 'text', 'auto': 'tool call', 'required': 'error 500'}
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import BackendError, NoToolCallingError, OutputLimitError, RigError

if TYPE_CHECKING:
    from .client import Client

__all__ = ["TOOL_CHOICES", "tool_choice_matrix", "tool_choice_verdict"]

# Matrix key -> the tool_choice the probe sends (None: the field is left out).
TOOL_CHOICES: dict[str, str | None] = {"unset": None, "auto": "auto", "required": "required"}


def tool_choice_verdict(client: Client, model: str, tool_choice: str | None) -> str:
    """One probe: "tool call", "text", "length", "error <status>", or "error <ErrorClass>"."""
    try:
        client.probe_tool_calling(model, tool_choice=tool_choice)
    except NoToolCallingError:
        return "text"
    except OutputLimitError:
        return "length"
    except BackendError as exc:
        return "error" if exc.status_code is None else f"error {exc.status_code}"
    except RigError as exc:
        return f"error {type(exc).__name__}"
    return "tool call"


def tool_choice_matrix(client: Client, model: str) -> dict[str, str]:
    """Probe `model` once per tool_choice setting (unset, "auto", "required"), in that order."""
    return {key: tool_choice_verdict(client, model, choice) for key, choice in TOOL_CHOICES.items()}
