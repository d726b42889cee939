"""The same two jobs through rig_nb, the raw openai SDK, and the peer agent loops.

Job "one": one request, the user prompt, a text answer "4".
Job "tool": the model calls add(a=2, b=2), the loop runs it and sends the
result back, the model answers "4": two requests.
Every contender checks the answer and counts tool calls, so all do the same work.
"""

from __future__ import annotations

import asyncio
import importlib
import io
import json
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import httpx
import openai
from common import API_KEY, MAX_TOKENS, MODEL, PROMPT, ROOT
from server import REASONING_MARK

# The rig_nb the loop figures in RESULTS.md were last measured on, before the deadline,
# the wire module and streaming: timed beside today's, in the same samples.
BEFORE_COMMIT = "c812361"
# main at the end of round 4, before every server kind became a plug-in (rig_nb/servers/,
# the wire subpackages, Calls in replies, the doctor's table): the loop and stream benches'
# baseline, which round 5 must not be slower than.
BEFORE_SERVERS = "5cc5cb2"

TIMEOUT = 120.0
ADD_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
}
ADD_OPENAI = {
    "type": "function",
    "function": {"name": "add", "description": "Add two integers.", "parameters": ADD_SCHEMA},
}


class Contender:
    """Runs the jobs `n` times in one call; `note` says how its work differs, if it does."""

    label = ""
    note = ""
    rounds_per_job = {"one": 1, "tool": 2}

    def __init__(self) -> None:
        self.tool_calls = 0

    def add(self, a: int, b: int) -> int:
        self.tool_calls += 1
        return a + b

    def one(self) -> str:
        raise NotImplementedError

    def tool(self) -> str:
        raise NotImplementedError

    def batch(self, job: str, n: int) -> Callable[[], None]:
        fn = getattr(self, job)

        def run() -> None:
            calls = self.tool_calls
            for _ in range(n):
                answer = fn()
                if str(answer).strip() != "4":
                    raise AssertionError(f"{self.label}: answer {answer!r}")
            want = n if job == "tool" else 0
            if self.tool_calls - calls != want:
                raise AssertionError(f"{self.label}: {self.tool_calls - calls} tool calls")

        return run

    def close(self) -> None:
        pass


def http_client() -> httpx.Client:
    """The httpx settings every sync contender gets: explicit timeout, nothing from the env."""
    return httpx.Client(timeout=TIMEOUT, trust_env=False)


class RawSync(Contender):
    label = "raw openai SDK (sync)"

    def __init__(self, url: str) -> None:
        super().__init__()
        self.client = openai.OpenAI(api_key=API_KEY, base_url=url, http_client=http_client())

    def _create(self, messages: list[dict[str, Any]], **extra: Any) -> Any:
        return self.client.chat.completions.create(
            model=MODEL, messages=messages, max_tokens=MAX_TOKENS, **extra
        )

    def one(self) -> str:
        return self._create([{"role": "user", "content": PROMPT}]).choices[0].message.content

    def tool(self) -> str:
        messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
        extra = {"tools": [ADD_OPENAI], "tool_choice": "auto"}
        msg = self._create(messages, **extra).choices[0].message
        calls = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": "add", "arguments": c.function.arguments},
            }
            for c in msg.tool_calls
        ]
        messages.append({"role": "assistant", "content": msg.content or "", "tool_calls": calls})
        for c in msg.tool_calls:
            result = self.add(**json.loads(c.function.arguments))
            messages.append({"role": "tool", "tool_call_id": c.id, "content": str(result)})
        return self._create(messages, **extra).choices[0].message.content

    def close(self) -> None:
        self.client.close()


def before_package(commit: str = BEFORE_COMMIT) -> str:
    """rig_nb as of `commit`, extracted from git as package `rig_nb_<commit>`; its name.

    The package imports itself relatively only, so it loads beside today's rig_nb.
    """
    name = f"rig_nb_{commit}"
    home = Path(tempfile.gettempdir()) / f"rig_nb_bench_{commit}"
    if not (home / name / "__init__.py").exists():
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", commit, "rig_nb"],
            capture_output=True,
            check=True,
        ).stdout
        staging = Path(tempfile.mkdtemp(prefix="rig_nb_bench_"))
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(staging, filter="data")
        home.mkdir(parents=True, exist_ok=True)
        (staging / "rig_nb").rename(home / name)
        staging.rmdir()
    if str(home) not in sys.path:
        sys.path.append(str(home))
    return name


class RigNb(Contender):
    label = "rig_nb Client.run"

    def __init__(
        self,
        url: str,
        *,
        shared_http: bool = False,
        package: str = "rig_nb",
        label: str = "",
        replay: bool = False,
        **client_kwargs: Any,
    ) -> None:
        rig = importlib.import_module(package)
        Client, RunRequest, Tool = rig.Client, rig.RunRequest, rig.Tool

        super().__init__()
        if shared_http:
            self.label = "rig_nb Client.run (http_client= as raw)"
        if label:
            self.label = label
        kwargs: dict[str, Any] = {"http_client": http_client()} if shared_http else {}
        self.client = Client(url, API_KEY, **kwargs, **client_kwargs)
        add = Tool("add", "Add two integers.", ADD_SCHEMA, lambda args: str(self.add(**args)))
        self.req_one = RunRequest(model=MODEL, max_tokens=MAX_TOKENS, prompt=PROMPT)
        self.req_tool = RunRequest(model=MODEL, max_tokens=MAX_TOKENS, prompt=PROMPT, tools=(add,))
        if replay:
            # Replies carry reasoning (server.py's REASONING_MARK) and the loop sends it back,
            # with thinking switched off as the llama.cpp mapping says.
            prompt = f"{PROMPT} {REASONING_MARK}"
            opts = {"thinking": False, "reasoning_replay": "tool_turns"}
            self.req_one = RunRequest(model=MODEL, max_tokens=MAX_TOKENS, prompt=prompt, **opts)
            self.req_tool = RunRequest(
                model=MODEL, max_tokens=MAX_TOKENS, prompt=prompt, tools=(add,), **opts
            )

    def one(self) -> str:
        return str(self.client.run(self.req_one).text)

    def tool(self) -> str:
        return str(self.client.run(self.req_tool).text)

    def close(self) -> None:
        self.client.close()


class _AsyncContender(Contender):
    """Async peers: every batch runs on one long-lived event loop (their best case)."""

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()

    def _run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return self.loop.run_until_complete(coro)

    def batch(self, job: str, n: int) -> Callable[[], None]:
        fn = getattr(self, "a" + job)

        async def many() -> list[Any]:
            return [await fn() for _ in range(n)]

        def run() -> None:
            calls = self.tool_calls
            answers = self._run(many())
            bad = [a for a in answers if str(a).strip() != "4"]
            if bad:
                raise AssertionError(f"{self.label}: answer {bad[0]!r}")
            if self.tool_calls - calls != (n if job == "tool" else 0):
                raise AssertionError(f"{self.label}: {self.tool_calls - calls} tool calls")

        return run

    def close(self) -> None:
        self.loop.close()


def async_openai(url: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        api_key=API_KEY,
        base_url=url,
        http_client=httpx.AsyncClient(timeout=TIMEOUT, trust_env=False),
    )


class RawAsync(_AsyncContender):
    label = "raw openai SDK (async, reference)"

    def __init__(self, url: str) -> None:
        super().__init__()
        self.client = async_openai(url)

    async def _create(self, messages: list[dict[str, Any]], **extra: Any) -> Any:
        return await self.client.chat.completions.create(
            model=MODEL, messages=messages, max_tokens=MAX_TOKENS, **extra
        )

    async def aone(self) -> str:
        reply = await self._create([{"role": "user", "content": PROMPT}])
        return reply.choices[0].message.content

    async def atool(self) -> str:
        messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
        extra = {"tools": [ADD_OPENAI], "tool_choice": "auto"}
        msg = (await self._create(messages, **extra)).choices[0].message
        calls = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": "add", "arguments": c.function.arguments},
            }
            for c in msg.tool_calls
        ]
        messages.append({"role": "assistant", "content": msg.content or "", "tool_calls": calls})
        for c in msg.tool_calls:
            result = self.add(**json.loads(c.function.arguments))
            messages.append({"role": "tool", "tool_call_id": c.id, "content": str(result)})
        return (await self._create(messages, **extra)).choices[0].message.content

    def close(self) -> None:
        self._run(self.client.close())
        super().close()


class OpenAIAgents(_AsyncContender):
    label = "openai-agents (OpenAIChatCompletionsModel)"
    note = "async only; Runner.run awaited on one event loop; tracing disabled"

    def __init__(self, url: str) -> None:
        from agents import (
            Agent,
            ModelSettings,
            OpenAIChatCompletionsModel,
            Runner,
            function_tool,
            set_tracing_disabled,
        )

        super().__init__()
        set_tracing_disabled(True)  # else it exports spans to the vendor's cloud
        self.client = async_openai(url)
        model = OpenAIChatCompletionsModel(model=MODEL, openai_client=self.client)

        @function_tool
        def add(a: int, b: int) -> int:
            """Add two integers."""
            return self.add(a, b)

        settings = ModelSettings(max_tokens=MAX_TOKENS)
        self.plain = Agent(name="bench", model=model, model_settings=settings)
        self.tooled = Agent(name="bench", model=model, model_settings=settings, tools=[add])
        self.runner = Runner

    async def aone(self) -> str:
        return str((await self.runner.run(self.plain, PROMPT)).final_output)

    async def atool(self) -> str:
        return str((await self.runner.run(self.tooled, PROMPT)).final_output)

    def close(self) -> None:
        self._run(self.client.close())
        super().close()


class PydanticAI(_AsyncContender):
    label = "pydantic-ai (OpenAIChatModel, base URL)"
    note = "agent.run awaited on one event loop"

    def __init__(self, url: str) -> None:
        from pydantic_ai import Agent
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        super().__init__()
        self.client = async_openai(url)
        model = OpenAIChatModel(MODEL, provider=OpenAIProvider(openai_client=self.client))
        settings: Any = {"max_tokens": MAX_TOKENS}
        self.plain: Any = Agent(model, model_settings=settings)
        self.tooled: Any = Agent(model, model_settings=settings)

        @self.tooled.tool_plain
        def add(a: int, b: int) -> int:
            """Add two integers."""
            return self.add(a, b)

    async def aone(self) -> str:
        return str((await self.plain.run(PROMPT)).output)

    async def atool(self) -> str:
        return str((await self.tooled.run(PROMPT)).output)

    def close(self) -> None:
        self._run(self.client.close())
        super().close()


class SmolAgents(Contender):
    label = "smolagents (OpenAIServerModel + ToolCallingAgent)"
    note = "answers only via a final_answer tool call; logging off; its prompt is ~10 KB"

    def __init__(self, url: str) -> None:
        from smolagents import LogLevel, OpenAIServerModel, ToolCallingAgent
        from smolagents import tool as smol_tool

        super().__init__()
        model = OpenAIServerModel(
            model_id=MODEL,
            api_base=url,
            api_key=API_KEY,
            client_kwargs={"http_client": http_client()},
            max_tokens=MAX_TOKENS,
        )
        self.model = model

        @smol_tool
        def add(a: int, b: int) -> int:
            """Add two integers.

            Args:
                a: first addend
                b: second addend
            """
            return self.add(a, b)

        quiet = {"verbosity_level": LogLevel.OFF, "max_steps": 4}
        self.plain = ToolCallingAgent(tools=[], model=model, **quiet)
        self.tooled = ToolCallingAgent(tools=[add], model=model, **quiet)

    def one(self) -> str:
        return str(self.plain.run(PROMPT))

    def tool(self) -> str:
        return str(self.tooled.run(PROMPT))


PEERS: dict[str, Callable[[str], Contender]] = {
    "openai-agents": OpenAIAgents,
    "pydantic-ai": PydanticAI,
    "smolagents": SmolAgents,
}
