"""Benchmark: ``replay-audit`` and ``audit`` of a 20-reader x 500-row binary
panel on the production code path, against ragscale's loop, in one run.

1. Whole ``replay-audit`` call (``analysis.audit.replay_audit_file`` on a
   ``paired_scores.csv``: read, every statistic at default counts, no output
   folder), CPU seconds.
2. Marginal CPU per split of that call: the slope between ``--low`` and
   ``--high`` splits (everything else at defaults, so only the split pass
   changes), against the slope of a plain re-implementation of ragscale
   0.5.1's split loop (one ``rng.permutation`` per split, a Python loop over
   reader pairs) and of the permutations alone (the floor for any
   implementation that reproduces ragscale's splits).
3. Whole ``audit_panel`` of that panel at defaults, CPU seconds.

Times are CPU seconds of this process, all threads (``time.process_time``):
on a shared machine wall time mostly measures the neighbours. Each figure is
the best of ``--repeat`` runs. Usage::

    python -m benchmarks replay_audit [--repeat 3] [--low 1000] [--high 5000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.bench_audit import SEED, N, simulate, write_paired_scores

CLOCK = time.process_time


def best(func, repeat: int) -> float:  # noqa: ANN001
    times = []
    for _ in range(repeat):
        start = CLOCK()
        func()
        times.append(CLOCK() - start)
    return min(times)


def ragscale_loop(raw: np.ndarray, comp: np.ndarray, splits: int, seed: int) -> float:
    """ragscale's replay split loop; returns the median excess flips."""
    m, n = raw.shape
    rng = np.random.default_rng(seed)
    half = n // 2
    excess = []
    for _ in range(splits):
        order = rng.permutation(n)
        select, score = order[:half], order[half:]
        raw_s = raw[:, select].mean(axis=1)
        raw_t = raw[:, score].mean(axis=1)
        comp_t = comp[:, score].mean(axis=1)
        eligible = raw_flips = comp_flips = 0
        for i in range(m):
            for j in range(i + 1, m):
                d = raw_s[j] - raw_s[i]
                if abs(d) < 0.05:
                    continue
                eligible += 1
                raw_flips += d * (raw_t[j] - raw_t[i]) < 0
                comp_flips += d * (comp_t[j] - comp_t[i]) < 0
        if eligible:
            excess.append((comp_flips - raw_flips) / eligible)
    return float(np.median(excess))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks replay_audit")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--low", type=int, default=1000)
    parser.add_argument("--high", type=int, default=5000)
    args = parser.parse_args(argv)

    from analysis.audit import AuditSettings, audit_panel, replay_audit_file
    from analysis.panel import PanelArrays
    from analysis.splits import permutations

    raw, comp, readers, families = simulate()
    panel = PanelArrays(
        "bench", "bench | em | raw -> comp", "em", raw, comp, tuple(readers),
        tuple(f"q{i:04d}" for i in range(N)), tuple(families),
    )  # fmt: skip
    low, high, repeat = args.low, args.high, args.repeat
    with tempfile.TemporaryDirectory() as tmp:
        path = write_paired_scores(
            Path(tmp) / "paired_scores.csv", raw, comp, readers, families
        )
        replay_audit_file(path, settings=AuditSettings(draws=20, splits=20))  # warm
        whole = best(lambda: replay_audit_file(path), repeat)
        ours_low = best(
            lambda: replay_audit_file(path, settings=AuditSettings(splits=low)), repeat
        )
        ours_high = whole if high == 5000 else best(
            lambda: replay_audit_file(path, settings=AuditSettings(splits=high)),
            repeat,
        )  # fmt: skip
    order = np.argsort(readers)  # ragscale sorts readers by name
    rs_low = best(lambda: ragscale_loop(raw[order], comp[order], low, SEED), 1)
    rs_high = best(lambda: ragscale_loop(raw[order], comp[order], high, SEED), 1)
    perm_low = best(lambda: permutations(np.random.default_rng(1), N, low), repeat)
    perm_high = best(lambda: permutations(np.random.default_rng(1), N, high), repeat)
    audit = best(lambda: audit_panel(panel), repeat)

    span = high - low
    ours = (ours_high - ours_low) / span
    theirs = (rs_high - rs_low) / span
    floor = (perm_high - perm_low) / span
    print(  # noqa: T201
        f"replay-audit, 20 x 500 binary panel, defaults: {whole:.2f} s CPU (best of {repeat})\n"
        f"marginal CPU per split ({low} -> {high} splits): replay-audit {ours * 1e6:.1f} us; "
        f"ragscale loop {theirs * 1e6:.0f} us ({theirs / ours:.1f}x ours); "
        f"permutations alone {floor * 1e6:.1f} us (ours = {ours / floor:.2f}x the floor)\n"
        f"audit_panel, same panel, defaults: {audit:.2f} s CPU (best of {repeat})"
    )


if __name__ == "__main__":  # pragma: no cover
    main()
