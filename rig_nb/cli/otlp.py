"""`--otlp URL` on run and compare: the traces sent to an OpenTelemetry collector.

The URL is checked as the arguments are parsed, and `opentelemetry-proto` before the
command sends any request (`check_otlp`: a usage error, exit 2); sending happens after
the results are printed, and a failure is one line on stderr that names neither the
URL nor a key (`rig_nb.report.export_otlp` redacts both) and exit `EXPORT_FAILED` (3),
whatever the run's own 0/1 would have been (DESIGN, round 5).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ..errors import BackendError
from .hints import CommandError, install
from .text import plural

if TYPE_CHECKING:
    from ..trace import Trace

__all__ = ["EXPORT_FAILED", "check_otlp", "otlp_arg", "send_otlp"]

# The exit status of a command whose results were printed but whose --otlp export failed.
EXPORT_FAILED = 3
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


def check_otlp(url: str | None) -> None:
    """With `--otlp` given, a usage error (exit 2) unless opentelemetry-proto can be
    imported: found before the run, not after its requests were sent."""
    if not url:
        return
    try:
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2  # noqa: F401
        from opentelemetry.proto.common.v1 import common_pb2  # noqa: F401
        from opentelemetry.proto.resource.v1 import resource_pb2  # noqa: F401
        from opentelemetry.proto.trace.v1 import trace_pb2  # noqa: F401
    except ImportError:
        raise CommandError(f"--otlp needs opentelemetry-proto: {install('otlp')}") from None


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
