"""Lake snapshots of a large replay: ``python -m benchmarks replay_batches --calls 10000``.

The bundled HotpotQA example (100 items x raw + summary = 200 keys per seed) is
replayed by one echo reader over enough seeds to make ``--calls`` calls against
a local OpenAI-compatible echo server (``python -m generation.server --model
echo``, its own process), with the default batch settings (1,000 calls or 30 s).
Prints the calls made, the lake snapshots the replay committed
(``ducklake_snapshots``), wall and CPU seconds.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

from benchmarks.echo_server import echo_server

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "data" / "examples" / "ragscale-openrouter-hotpotqa"
DATASET = "hotpotqa-demo-100"
SUMMARY = "llm-summary:qwen/qwen3-14b"


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks replay_batches")
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args(argv)

    import warehouse
    from generation.backends.retry import RetryPolicy
    from generation.readers import load_reader_config
    from generation.runner import replay
    from ingest.ragscale import load_ragscale

    seeds = max(1, -(-args.calls // 200))
    with echo_server() as url, tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "warehouse.duckdb"
        con = warehouse.connect(db)
        load_ragscale(con, EXAMPLE)
        config = Path(folder) / "readers.yaml"
        config.write_text(
            "readers:\n  echo:\n    model: openai/echo\n    family: echo\n"
            f"    api_base: {url}\n    parameters: {{max_tokens: 8}}\n"
        )
        reader = load_reader_config(config).reader("echo")
        count = "select count(*) from ducklake_snapshots('lake')"
        before = con.execute(count).fetchone()[0]
        usage = resource.getrusage(resource.RUSAGE_SELF)
        cpu = usage.ru_utime + usage.ru_stime
        clock = time.perf_counter()
        summary = replay(
            con,
            DATASET,
            [reader],
            ["raw", SUMMARY],
            seeds=list(range(seeds)),
            concurrency=args.concurrency,
            retry=RetryPolicy(backoff_base_s=0.0),
        )
        wall = time.perf_counter() - clock
        usage = resource.getrusage(resource.RUSAGE_SELF)
        cpu = usage.ru_utime + usage.ru_stime - cpu
        snapshots = con.execute(count).fetchone()[0] - before
        con.close()
    print(  # noqa: T201
        f"calls made {summary.made} (ok {summary.ok}), lake snapshots {snapshots} "
        f"(summary: {summary.commits} commits), wall {wall:.1f} s, "
        f"replay CPU {cpu:.1f} s, concurrency {args.concurrency}"
    )
