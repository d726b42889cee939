"""The endpoint doctor: what an endpoint really does, and what to change on the server.

report = endpoint_report(client, "qwen3")
report.server                      # "vllm", "llama.cpp", ... or "unknown"
report.to_dataframe()              # check, verdict, evidence, advice

doctor.py      endpoint_report, CHECKS (every check, its budget of model requests)
report.py      Check, EndpointReport, describe_report, whether a verdict is good news
replies.py     the shared requests and the checks read off their replies
thinking.py    reasoning across turns: reasoning_replay, thinking_switch
structured.py  structured_output (where a response_format answer lands)
long_context.py  the server's version and window, context_window, prefix_cache
api_parity.py  the probe and the question over every other wire
stream_grammar.py  whether streams keep their grammar
concurrency.py four probes at once: parallel, serialized, errors under load, crossed
tool_schemas.py  tool_schema_report (SCHEMA_FEATURES or your tools), the tool_schemas check
honored.py     honored_params (tool_choice, parallel_tool_calls, max_tokens, stop applied?)
advice.py      which of the server profile's advice a verdict calls for
"""

from .doctor import *  # noqa: F403  (the public face is doctor's __all__)
from .doctor import __all__ as __all__
