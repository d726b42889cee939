"""Agent client profiles: the request shapes of the coding agents people run (2026).

    from rig_nb.clients import CLIENTS
    CLIENTS["codex"].api        # "responses": the wire it speaks
    RunRequest(model, 512, prompt=..., tools=..., client="codex")

`CLIENTS` maps each client's name to its `ClientProfile`: `claude-code` (Messages),
`codex` (Responses), `opencode` (chat). A run with `client=` sends every request shaped
the way that client does (each rule and its public source in the profile's module), so
a server that breaks on the client breaks in the run too.
"""

from __future__ import annotations

from types import MappingProxyType

from .claude_code import CLAUDE_CODE
from .codex import CODEX
from .opencode import OPENCODE
from .profile import ClientProfile, Shape

__all__ = ["CLIENTS", "ClientProfile", "Shape", "check_client", "client_for"]

CLIENTS: MappingProxyType[str, ClientProfile] = MappingProxyType(
    {p.name: p for p in (CLAUDE_CODE, CODEX, OPENCODE)}
)


def check_client(name: str | None) -> ClientProfile | None:
    """The profile named `name` (None for None); ValueError listing the names otherwise."""
    if name is None:
        return None
    found = CLIENTS.get(name) if isinstance(name, str) else None
    if found is None:
        raise ValueError(f"unknown client {name!r}: the clients are {', '.join(CLIENTS)}")
    return found


def client_for(name: str | None, api: str) -> ClientProfile | None:
    """The profile named `name` for a run over the wire `api` (None for None); ValueError
    for an unknown name (listing the names) or a profile of another wire (naming both)."""
    found = check_client(name)
    if found is not None and found.api != api:
        raise ValueError(
            f"client {found.name!r} speaks the {found.api} wire, but this run's client "
            f"speaks {api}: use Client(api={found.api!r}) or client.over({found.api!r})"
        )
    return found
