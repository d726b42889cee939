"""bfcl-eval's own verdicts, run by the Python of scripts/setup-bfcl's venv (never rig_nb's).

Reads JSON Lines on stdin, one job a line: {"id", "category", "functions", "answer",
"calls": [[name, arguments as sent], ...]}; writes one line per job: {"id", "valid",
"error_type"} (error_type "" when valid; "crash: <class>" when bfcl-eval raised). Each job
goes through bfcl-eval's FC evaluation path as its runner does for an OpenAI-style model:
`eval_runner._evaluate_single_ast_entry` (or `_evaluate_single_relevance_entry` for the
irrelevance categories) with the FC handler's `decode_ast`, then `ast_checker`.

`--bench SECONDS`: time `ast_checker` alone on the jobs' calls decoded beforehand, round
after round for at least SECONDS of CPU, and print {"judgments", "cpu_s"}.
"""

from __future__ import annotations

import json
import os
import sys
import time

# The handler builds an OpenAI client at construction (no request is ever made).
os.environ.setdefault("OPENAI_API_KEY", "unused")

from bfcl_eval.constants.enums import Language, ReturnFormat  # noqa: E402
from bfcl_eval.eval_checker import eval_runner  # noqa: E402
from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker  # noqa: E402

# An OpenAI-style FC model: tools sent with dots as underscores, checked the same way.
MODEL = "gpt-4.1-2025-04-14-FC"


def verdict(handler: object, job: dict) -> dict:
    category = job["category"]
    result = [{name: arguments} for name, arguments in job["calls"]]
    prompt = {"id": job["id"], "function": job["functions"]}
    try:
        if "irrelevance" in category:
            out = eval_runner._evaluate_single_relevance_entry(
                handler, job["id"], result, prompt, MODEL, category
            )
        else:
            out = eval_runner._evaluate_single_ast_entry(
                handler,
                job["id"],
                result,
                job["answer"],
                prompt,
                MODEL,
                category,
                Language.PYTHON,
                ReturnFormat.PYTHON,
            )
    except Exception as exc:  # bfcl-eval's checker raised: reported, not hidden
        return {"id": job["id"], "valid": False, "error_type": f"crash: {type(exc).__name__}"}
    return {"id": job["id"], "valid": out["valid"], "error_type": out.get("error_type", "")}


def bench(jobs: list[dict], seconds: float) -> dict:
    prepared = [
        (j["functions"], [{n: json.loads(a)} for n, a in j["calls"]], j["answer"], j["category"])
        for j in jobs
        if "irrelevance" not in j["category"]
    ]
    judgments = 0
    start = time.process_time()
    while time.process_time() - start < seconds:
        for functions, decoded, answer, category in prepared:
            ast_checker(functions, decoded, answer, Language.PYTHON, category, MODEL)
        judgments += len(prepared)
    return {"judgments": judgments, "cpu_s": time.process_time() - start}


def main() -> None:
    jobs = [json.loads(line) for line in sys.stdin if line.strip()]
    if len(sys.argv) == 3 and sys.argv[1] == "--bench":
        print(json.dumps(bench(jobs, float(sys.argv[2]))))
        return
    handler = eval_runner.get_handler(MODEL)
    for job in jobs:
        print(json.dumps(verdict(handler, job)))


if __name__ == "__main__":
    main()
