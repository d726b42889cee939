"""The one redactor: removes an endpoint's key and base URL from any text shown to people.

Gateways put tokens in hosts and paths and echo them in error pages, so the
base URL is removed whole and in parts: its origin, host and port, host, the
path, every leading part of the path (`/t0k3n/v1` -> also `/t0k3n`), and each
path segment of 8 or more characters on its own. Segments that name no secret
(`v1`, `api`, `openai`, ...) stay readable, and so does a leading part made of
them only. The key is removed as given, URL-encoded and JSON-escaped.

Everything goes in one regex pass with the longest secret first, so the mask
never meets a later secret and the cost is linear in the text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from urllib.parse import quote, urlsplit

__all__ = ["MASK", "Redactor"]

MASK = "[redacted]"
# Path segments that carry no secret: API versions and common gateway prefixes.
_PLAIN_SEGMENTS = frozenset({"api", "openai", "v1", "v2", "v3", "v1beta", "chat", "completions"})
_LONG_SEGMENT = 8


def _key_forms(key: str) -> set[str]:
    escaped = {json.dumps(key)[1:-1], json.dumps(key, ensure_ascii=False)[1:-1]}
    # JSON may escape "/" as "\/" (PHP's json_encode does by default).
    escaped |= {form.replace("/", "\\/") for form in escaped}
    return {key, quote(key, safe=""), quote(key), quote(key, safe="").lower(), *escaped}


def _url_forms(url: str) -> set[str]:
    url = url.strip()
    parts = urlsplit(url)
    forms = {url, url.rstrip("/")}
    if parts.netloc:
        forms |= {f"{parts.scheme}://{parts.netloc}", parts.netloc, parts.netloc.lower()}
    if parts.hostname:
        forms.add(parts.hostname)
    segments = [s for s in parts.path.split("/") if s]
    for n in range(1, len(segments) + 1):
        if any(s.lower() not in _PLAIN_SEGMENTS for s in segments[:n]):
            forms.add("/" + "/".join(segments[:n]))
    forms |= {s for s in segments if len(s) >= _LONG_SEGMENT and s.lower() not in _PLAIN_SEGMENTS}
    return forms


class Redactor:
    """Call it on text to get the text with every secret form replaced by MASK."""

    def __init__(self, api_key: str = "", urls: Iterable[str] = ()) -> None:
        secrets: set[str] = set()
        if api_key:
            secrets |= _key_forms(api_key)
        for url in urls:
            if url:
                secrets |= _url_forms(url)
        ordered = sorted((s for s in secrets if len(s) > 1), key=len, reverse=True)
        self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    def __call__(self, text: str) -> str:
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(MASK, text)

    def __repr__(self) -> str:
        return "Redactor()"
