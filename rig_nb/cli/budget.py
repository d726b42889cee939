"""The request budget of `compare` and `bfcl`: how many model requests a run would send, and
`--max-requests`, checked before the first one.

`compare --load 100000` once sent its requests to a server with no warning (issue 45): a
run planned past `DEFAULT_MAX_REQUESTS` is refused (a usage error, exit 2) unless
`--max-requests N` allows that many, and the refusal says how many it would send.

The count is what compare sends at most: every (endpoint, level, scenario, repeat) copy
as `rig_nb.load.plan` lays them out (a level L is L copies), each sending at most its
scenario's requests (`most_requests`). A request the transport sends again after a
failure is not counted: it is the same request.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .hints import CommandError

if TYPE_CHECKING:
    from ..scenarios import Scenario

__all__ = [
    "DEFAULT_MAX_REQUESTS",
    "check_budget",
    "max_requests_arg",
    "most_requests",
    "planned_requests",
]

# The most model requests a command sends without --max-requests (DESIGN, round 5).
DEFAULT_MAX_REQUESTS = 1000


def most_requests(scenario: Scenario) -> int:
    """The model requests one run of `scenario` sends at most: one for a probe or a judged
    call (kinds "probe", "calls"); the loop's iteration cap for a run (as `check_request`
    holds it: 0 is the default cap, and no cap is above the loop's ceiling)."""
    from ..loop import DEFAULT_ITERATIONS, MAX_ITERATIONS

    if scenario.kind != "run":
        return 1
    cap = scenario.max_iterations
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 0:
        return 1  # refused before any request; counted as one to stay on the safe side
    return min(cap or DEFAULT_ITERATIONS, MAX_ITERATIONS)


def planned_requests(
    endpoints: int,
    scenarios: Sequence[Scenario],
    *,
    repeats: int = 1,
    levels: Sequence[int] = (1,),
) -> int:
    """The model requests compare sends at most for `endpoints` endpoints: each scenario's
    `most_requests`, times the repeats, times the copies of every load level."""
    return endpoints * repeats * sum(levels) * sum(most_requests(s) for s in scenarios)


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, not {text!r}")
    return value


def max_requests_arg(p: argparse.ArgumentParser) -> None:
    """`--max-requests N` on a command that sends many requests."""
    p.add_argument(
        "--max-requests",
        type=_count,
        default=DEFAULT_MAX_REQUESTS,
        metavar="N",
        help="send at most N model requests: a run planned past N is refused before it "
        "starts, saying how many it would send",
    )


def _thousands(n: int) -> str:
    return f"{n:,}"


def check_budget(command: str, planned: int, allowed: int, how: str = "") -> None:
    """A usage error (exit 2), before any request, when `planned` is above `allowed`.

    `how` says what the count is made of (e.g. "5 scenarios x 2 endpoints x ...").
    """
    if planned <= allowed:
        return
    made_of = f" ({how})" if how else ""
    raise CommandError(
        f"{command} would send up to {_thousands(planned)} model requests{made_of}, more than "
        f"{_thousands(allowed)}: pass --max-requests {planned} to allow it, or send fewer"
    )
