"""Benchmark: reader replay throughput.

1. Local readers (in-process transformers, greedy) on the bundled HotpotQA rows,
   under raw evidence (~1,450 prompt tokens) and under the stored summaries
   (~250): calls/s and prompt tokens/s per model and condition.
2. The runner's concurrency against a local OpenAI-compatible server that sleeps
   a fixed time per call (echo replies, through litellm): wall time and speed-up
   of concurrency N over 1.

Usage::

    python -m benchmarks readers [--items 5] [--models smollm2-135m-instruct,gemma3-270m]
        [--sleep 0.25] [--calls 40] [--concurrency 1,4,8] [--skip-local]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import warehouse  # noqa: E402
from generation.backends.retry import RetryPolicy  # noqa: E402
from generation.readers import load_reader_config  # noqa: E402
from generation.runner import replay  # noqa: E402
from generation.server import ChatServer, EchoBackend  # noqa: E402
from ingest.ragscale import load_ragscale  # noqa: E402

EXAMPLE = (
    Path(__file__).resolve().parents[1] / "data/examples/ragscale-openrouter-hotpotqa"
)
DATASET = "hotpotqa-demo-100"
SUMMARY = "llm-summary:qwen/qwen3-14b"


def _fresh(root: Path, name: str):  # noqa: ANN202 (a DuckDB connection)
    con = warehouse.connect(root / f"{name}.duckdb")
    load_ragscale(con, EXAMPLE)
    return con


def local_throughput(root: Path, models: list[str], items: int) -> None:
    from generation.backends.local import LocalBackend

    config = load_reader_config()
    for model in models:
        reader = config.reader(f"local/{model}")
        started = time.perf_counter()
        LocalBackend(model).check()
        print(f"{model}: loaded in {time.perf_counter() - started:.1f} s")  # noqa: T201
        for label, policy in (("raw", "raw"), ("compressed", SUMMARY)):
            con = _fresh(root, f"{model.replace('/', '_')}-{label}")
            summary = replay(
                con, DATASET, [reader], [policy], limit=items, concurrency=1
            )
            con.close()
            seconds = summary.elapsed_s
            print(  # noqa: T201
                f"  {label:10s} {summary.made} calls in {seconds:.1f} s: "
                f"{summary.made / seconds:.3f} calls/s, "
                f"{summary.prompt_tokens / seconds:.0f} prompt tokens/s, "
                f"{summary.prompt_tokens / max(summary.made, 1):.0f} prompt tokens/call, "
                f"{summary.completion_tokens / max(summary.made, 1):.1f} output tokens/call"
            )


def concurrency_speedup(
    root: Path, sleep_s: float, calls: int, levels: list[int]
) -> None:
    import litellm  # noqa: F401  (import once, outside the timings)

    items = max(1, calls // 2)
    baseline = None
    with ChatServer(EchoBackend(), sleep_s=sleep_s) as server:
        path = root / "readers.yaml"
        path.write_text(
            "readers:\n  echo:\n    model: openai/echo\n    family: echo\n"
            f"    api_base: {server.url}\n    parameters: {{max_tokens: 8}}\n"
        )
        reader = load_reader_config(path).reader("echo")
        for level in levels:
            con = _fresh(root, f"concurrency-{level}")
            before = len(server.requests)
            summary = replay(
                con,
                DATASET,
                [reader],
                ["raw", SUMMARY],
                limit=items,
                concurrency=level,
                retry=RetryPolicy(backoff_base_s=0.0),
            )
            con.close()
            made = len(server.requests) - before
            seconds = summary.elapsed_s
            baseline = baseline or seconds
            print(  # noqa: T201
                f"concurrency {level:2d}: {made} calls ({sleep_s:.2f} s each) in "
                f"{seconds:.2f} s = {made / seconds:.1f} calls/s; speed-up "
                f"{baseline / seconds:.2f}x (ideal {level}x; max in flight "
                f"{server.max_in_flight})"
            )
            server.max_in_flight = 0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=5)
    parser.add_argument("--models", default="smollm2-135m-instruct,gemma3-270m")
    parser.add_argument("--sleep", type=float, default=0.25)
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--concurrency", default="1,4,8")
    parser.add_argument("--skip-local", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-readers-") as folder:
        root = Path(folder)
        if not args.skip_local:
            models = [m for m in args.models.split(",") if m]
            local_throughput(root, models, args.items)
        levels = [int(level) for level in args.concurrency.split(",")]
        concurrency_speedup(root, args.sleep, args.calls, levels)


if __name__ == "__main__":
    main()
