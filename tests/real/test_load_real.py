"""The endpoint under concurrent runs, for real (DESIGN, Round 4 "Load"): llama-server with
SmolLM2-135M started with `-np 1` and with `-np 4`, the doctor's `concurrency` verdict on each
and a compare over `load=(1, 4)`; then a LiteLLM proxy in front of the `-np 4` server.

Two shared CPUs bound what `-np 4` can give (FINDINGS.md, "Under load"): the four slots share
the same two cores, and the host's other work moves a reply's time by an order of magnitude
between minutes. Each test prints what it measured; the assertions hold the shape (verdict
words, rows, no crossed stream), not the numbers.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pandas as pd
import pytest
from llama_server_procs import (
    LiteLLMProxy,
    Proc,
    ServerEnv,
    litellm_model_name,
    litellm_proxy,
    llama_server,
)
from llama_servers import TIMEOUT_S

from rig_nb import Client
from rig_nb.capabilities.concurrency import concurrency_check
from rig_nb.compare import Endpoint, Scenario, compare, summarize
from rig_nb.servers import profile

FLAVOUR = "hermes-tools"
QUESTION = Scenario("plain", prompt="What is the capital of France?", max_tokens=16)
VERDICT = re.compile(r"(parallel|partly parallel|serialized) \((\d+\.\d)x\)")


@pytest.fixture(scope="module")
def np1(server_env: ServerEnv, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proc]:
    """One slot: requests queue."""
    with llama_server(server_env, FLAVOUR, tmp_path_factory.mktemp("np1")) as s:
        yield s


@pytest.fixture(scope="module")
def np4(server_env: ServerEnv, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proc]:
    """Four slots (the later `--parallel 4` wins), each with a quarter of the context."""
    logs = tmp_path_factory.mktemp("np4")
    with llama_server(server_env, FLAVOUR, logs, extra=("--parallel", "4")) as s:
        yield s


@pytest.fixture(scope="module")
def proxy(
    server_env: ServerEnv, np4: Proc, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiteLLMProxy]:
    with litellm_proxy(server_env, [np4], tmp_path_factory.mktemp("litellm-load")) as p:
        yield p


def _verdict(base_url: str, model: str, api_key: str = "", server: str = "llama.cpp") -> str:
    with Client(base_url, api_key, timeout=TIMEOUT_S) as client:
        lone = client.probe_trace(model)
        verdict, evidence, advice, trace = concurrency_check(client, model, profile(server), lone)
    print(f"\n{base_url} {model}: {verdict}; {evidence}; fix: {advice}")
    assert VERDICT.fullmatch(verdict), verdict  # four replies, none crossed, none failed
    assert evidence.endswith("0 failed") and trace is not None
    assert (advice != "") == (not verdict.startswith("parallel"))
    return verdict


def test_concurrency_verdicts_of_one_and_four_slots(np1: Proc, np4: Proc) -> None:
    one = _verdict(np1.base_url, np1.model)
    _verdict(np4.base_url, np4.model)
    assert not one.startswith("parallel")  # one slot: the four queue


def _sweep(endpoint: Endpoint) -> tuple[pd.DataFrame, pd.DataFrame]:
    df = compare([endpoint], scenarios=[QUESTION], load=(1, 4), timeout=TIMEOUT_S, progress=False)
    table = summarize(df)
    print(f"\n{endpoint.name}:\n{df[['load', 'copy', 'outcome', 'latency_s']].to_string()}")
    print(table.round(3).to_string())
    assert list(table["load"]) == [1, 4] and list(table["runs"]) == [1, 4]
    # A 16-token budget may end a reply at the limit; no copy carried another's nonce.
    assert set(df["outcome"]) <= {"ok", "OutputLimitError"}
    assert (table["output_tokens_per_s"] > 0).all()
    return df, table


def test_compare_over_load_one_and_four(np1: Proc, np4: Proc) -> None:
    df, _ = _sweep(Endpoint("np1", np1.base_url, np1.model))
    # One slot: the copies of load 4 wait for each other, the last for three.
    alone, loaded = df[df["load"] == 1]["latency_s"], df[df["load"] == 4]["latency_s"]
    assert loaded.max() > alone.max()
    _sweep(Endpoint("np4", np4.base_url, np4.model))


def test_litellm_in_front_of_four_slots(proxy: LiteLLMProxy, np4: Proc) -> None:
    name = litellm_model_name(np4)
    key = proxy.api_key or ""
    _verdict(proxy.base_url, name, key, server="litellm")
    _sweep(Endpoint("litellm", proxy.base_url, name, key))
