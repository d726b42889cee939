"""rig_nb.redact.Redactor: the key and the base URL removed from any text, in every form.

DESIGN (Client): the key whole, URL-encoded and JSON-escaped; the base URL whole, its
origin, host, path, every leading part of the path and each path segment of 8 or more
characters; `v1`, `v2`, `api`, `openai` stay readable. The cost is linear in the text.
"""

from __future__ import annotations

import json
import time
from urllib.parse import quote

import pytest

from rig_nb.redact import MASK, Redactor

KEY = 'sk-live/Ab+c"d\\e\u00e9f'
URL = "https://GW.example.com:8443/t0k3n/tenant-0123456789/abc/v1"


@pytest.fixture
def redact() -> Redactor:
    return Redactor(KEY, [URL])


@pytest.mark.parametrize(
    "form",
    [
        pytest.param(KEY, id="whole"),
        pytest.param(quote(KEY, safe=""), id="url-encoded"),
        pytest.param(quote(KEY), id="url-encoded-path-safe"),
        pytest.param(quote(KEY, safe="").lower(), id="url-encoded-lower"),
        pytest.param(json.dumps(KEY)[1:-1], id="json-escaped"),
        pytest.param(json.dumps(KEY, ensure_ascii=False)[1:-1], id="json-escaped-utf8"),
        pytest.param(json.dumps(KEY)[1:-1].replace("/", "\\/"), id="json-escaped-solidus"),
    ],
)
def test_every_form_of_the_key_is_removed(redact: Redactor, form: str) -> None:
    out = redact(f"invalid key <{form}> given")
    assert out == f"invalid key <{MASK}> given"


def test_the_key_is_removed_wherever_it_recurs(redact: Redactor) -> None:
    text = f"{KEY}{KEY} and {json.dumps({'key': KEY})}"
    out = redact(text)
    assert KEY not in out and json.dumps(KEY)[1:-1] not in out
    assert out.count(MASK) == 3


@pytest.mark.parametrize(
    "form",
    [
        pytest.param(URL, id="whole"),
        pytest.param(URL + "/", id="trailing-slash"),
        pytest.param("https://GW.example.com:8443", id="origin"),
        pytest.param("GW.example.com:8443", id="netloc"),
        pytest.param("gw.example.com", id="host-lowercased"),
        pytest.param("/t0k3n/tenant-0123456789/abc/v1", id="path"),
        pytest.param("/t0k3n", id="first-leading-part"),
        pytest.param("/t0k3n/tenant-0123456789", id="second-leading-part"),
        pytest.param("/t0k3n/tenant-0123456789/abc", id="third-leading-part"),
        pytest.param("tenant-0123456789", id="long-segment-alone"),
    ],
)
def test_every_part_of_the_base_url_is_removed(redact: Redactor, form: str) -> None:
    out = redact(f"no route [{form}] here")
    assert form not in out
    assert MASK in out


def test_short_segments_alone_and_plain_segments_stay_readable() -> None:
    redact = Redactor("", ["http://h.example:1/abc/api/openai/v2/v1"])
    out = redact("use abc with api, openai, v1 and v2 at /v1")
    # "abc" is a leading part's name only with its slash; plain names never hide.
    assert out == "use abc with api, openai, v1 and v2 at /v1"
    assert redact("GET /abc/api failed") == f"GET {MASK} failed"


def test_a_path_made_only_of_plain_segments_is_kept() -> None:
    redact = Redactor("", ["http://127.0.0.1:8000/api/v1"])
    assert redact("POST /api/v1/chat/completions: 404") == "POST /api/v1/chat/completions: 404"
    assert "127.0.0.1:8000" not in redact("at http://127.0.0.1:8000/api/v1")


def test_the_longest_secret_wins_so_no_piece_is_left(redact: Redactor) -> None:
    out = redact(f"GET {URL}/chat/completions")
    assert out == f"GET {MASK}/chat/completions"
    for piece in ("t0k3n", "tenant-0123456789", "example.com"):
        assert piece not in out


def test_an_empty_key_and_no_url_change_nothing() -> None:
    redact = Redactor("", [])
    text = "anything at all, sk- included"
    assert redact(text) == text
    assert redact("") == ""


def test_an_empty_key_masks_no_empty_string() -> None:
    redact = Redactor("", ["http://gw.example/secret-path-123/v1"])
    out = redact("abc")
    assert out == "abc"
    assert redact("at /secret-path-123") == f"at {MASK}"


def test_a_one_character_key_is_not_masked_everywhere() -> None:
    # A mask for every "a" would hide the whole message; one character hides nothing.
    assert Redactor("a", []).__call__("a cat") == "a cat"


def test_several_urls_are_all_removed() -> None:
    redact = Redactor("k" * 12, ["http://one.example/v1", "http://two.example/gw-abcdefgh"])
    out = redact("one.example, two.example, gw-abcdefgh, kkkkkkkkkkkk")
    assert out == ", ".join([MASK] * 4)


def test_the_repr_holds_no_secret(redact: Redactor) -> None:
    assert KEY not in repr(redact) and "t0k3n" not in repr(redact)


def test_linear_on_a_mebibyte_of_near_misses() -> None:
    # Text made of the key's and the path's prefixes makes every position a partial match:
    # the worst case for a scan that restarts at each position.
    key = "sk-" + "q" * 60
    redact = Redactor(key, ["http://gw.example/" + "p" * 60 + "/v1"])
    unit = key[:-1] + " " + "/" + "p" * 59 + " "
    text = unit * ((1 << 20) // len(unit))
    start = time.perf_counter()
    out = redact(text)
    elapsed = time.perf_counter() - start
    assert out == text  # nothing matched whole
    # An absolute bound, not a ratio: a quadratic scan of 1 MiB takes minutes.
    assert elapsed < 5.0


def test_a_mebibyte_of_secrets_is_fully_masked() -> None:
    key = "sk-abcdefgh"
    redact = Redactor(key, [])
    text = (key + ".") * ((1 << 20) // (len(key) + 1))
    out = redact(text)
    assert key not in out
    assert out.count(MASK) == text.count(key)
