"""`--otlp URL` on run and compare: the traces sent to an OpenTelemetry collector.

The URL is checked as the arguments are parsed (a usage error, exit 2, before any request);
sending happens after the results are printed, and a failure is one line on stderr that
names neither the URL nor a key (`rig_nb.report.export_otlp` redacts both).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ..errors import BackendError
from .hints import install
from .text import plural

if TYPE_CHECKING:
    from ..trace import Trace

__all__ = ["otlp_arg", "send_otlp"]

# The whole export's deadline: a collector that accepts and never answers ends here.
DEADLINE_S = 10.0


def _otlp_url(text: str) -> str:
    # The URL is not echoed: a collector's URL may hold a token.
    try:
        parts = urlsplit(text)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
        parts.port  # noqa: B018 (raises on a port out of range)
    except ValueError:
        ok = False
    if not ok:
        raise argparse.ArgumentTypeError(
            "expected the collector's full http(s) URL, e.g. http://127.0.0.1:6006/v1/traces"
        )
    return text


def otlp_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--otlp",
        type=_otlp_url,
        metavar="URL",
        help="also send the traces as OpenTelemetry GenAI spans (OTLP/HTTP protobuf, no message "
        "content) to the collector at URL, its full /v1/traces address: e.g. Phoenix at "
        "http://127.0.0.1:6006/v1/traces. Needs opentelemetry-proto",
    )


def send_otlp(traces: Sequence[Trace], url: str) -> bool:
    """Send `traces` to `url`; what became of it is one line on stderr. False on failure."""
    try:
        from ..report import export_otlp

        export_otlp(list(traces), url, deadline=DEADLINE_S)
    except ImportError:
        print(f"rig-nb: --otlp: needs opentelemetry-proto: {install('otlp')}", file=sys.stderr)
        return False
    except BackendError as exc:
        print(f"rig-nb: --otlp: {exc}", file=sys.stderr)
        return False
    print(f"sent {plural(len(traces), 'trace')} to the OTLP collector", file=sys.stderr)
    return True
