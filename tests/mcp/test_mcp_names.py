"""MCP tool names as rig_nb names, `include` patterns, and a result as text (no server)."""

from __future__ import annotations

import re
from types import SimpleNamespace as Block

from rig_nb.mcp import McpTools
from rig_nb.mcp.names import matches, render_result, rig_names

VALID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def test_valid_names_are_kept_and_the_others_cleaned_cut_and_numbered() -> None:
    given = ["ok", "a.b", "a b", "a_b", "\u00e9", "", "x" * 70, "x" * 64, "ok"]
    names = rig_names(given)
    assert names == ["ok", "a_b_2", "a_b_3", "a_b", "_", "__2", "x" * 62 + "_2", "x" * 64, "ok_2"]
    assert len(set(names)) == len(names) and all(VALID.match(n) for n in names)


def test_include_matches_names_globs_and_cleaned_names() -> None:
    assert matches("get.weather", ["get.weather"]) and matches("get.weather", ["get_*"])
    assert matches("echo", ["e?ho"]) and not matches("echo", ["Echo", "ech"])


def test_a_result_as_text() -> None:
    text = Block(type="text", text="one")
    image = Block(type="image", mime_type="image/png")
    audio = Block(type="audio", mime_type="audio/wav")
    link = Block(type="resource_link", uri="file:///a.txt")
    embedded = Block(type="resource", resource=Block(uri="file:///b", text="inside"))
    blob = Block(type="resource", resource=Block(uri="file:///c", text=None))
    assert render_result([text, Block(type="text", text="two")], {"x": 1}) == "one\ntwo"
    assert render_result([image, audio], None) == "[image: image/png]\n[audio: audio/wav]"
    assert (
        render_result([image], {"a": [1, 2], "b": "\u00e9"})
        == '{"a":[1,2],"b":"\u00e9"}\n[image: image/png]'
    )
    assert render_result([], {"n": 1}) == '{"n":1}'
    assert render_result([link, embedded, blob], None) == (
        "[resource: file:///a.txt]\ninside\n[resource: file:///c]"
    )
    assert render_result([], None) == ""


def test_the_repr_shows_neither_env_nor_headers() -> None:
    stdio = McpTools(["node", "server.js"], env={"API_KEY": "sk-secret-0123456789"})
    http = McpTools(url="http://127.0.0.1:9/t0k3n/mcp", headers={"Authorization": "Bearer s3cret"})
    assert "sk-secret" not in repr(stdio) and "node" in repr(stdio)
    assert "s3cret" not in repr(http) and "t0k3n" not in repr(http) and "127.0.0.1:9" in repr(http)
