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
4. Where a split's CPU goes: each step of the pass (the functions
   :func:`analysis.split_pass.split_audit` calls, on batches of its default size),
   median over batches.

Times are CPU seconds of this process, all threads (``time.process_time``):
on a shared machine wall time mostly measures the neighbours. Each figure is
the best of ``--repeat`` runs. Usage::

    python -m benchmarks replay_audit [--repeat 3] [--low 1000] [--high 20000]

The slope is taken over a wide span: each whole call also runs the
bootstraps and nulls (about 1 s), whose jitter would swamp a narrow one.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from analysis.settings import DEFAULTS
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
    parser.add_argument("--high", type=int, default=20000)
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
        ours_high = best(
            lambda: replay_audit_file(path, settings=AuditSettings(splits=high)),
            repeat,
        )
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
    steps = split_steps(raw, comp, families)
    print("split pass, CPU per split by step (median of 12 batches):")  # noqa: T201
    for name, seconds in steps.items():
        print(f"  {name:<28} {seconds * 1e6:5.1f} us")  # noqa: T201
    print(f"  {'total':<28} {sum(steps.values()) * 1e6:5.1f} us")  # noqa: T201


def split_steps(raw: np.ndarray, comp: np.ndarray, families: list[str]) -> dict:
    """CPU seconds per split of each step ``split_audit`` runs on one batch."""
    from analysis.bootstrap import single_blas
    from analysis.disjoint_rows import disjoint_splits
    from analysis.flips import flip_counts, pair_flips
    from analysis.held_out import held_out_splits
    from analysis.mcnemar_resolution import mcnemar_splits
    from analysis.resolution_crossfit import crossfit_splits
    from analysis.screen import screen_splits
    from analysis.splits import DEFAULT_BATCH, SplitPanel, pair_lookup, permutations

    m = raw.shape[0]
    codes = np.unique(np.asarray(families), return_inverse=True)[1]
    lookup = pair_lookup(m)
    panel = SplitPanel(raw, comp, products=True)
    rng = np.random.default_rng(SEED)
    times: dict[str, list[float]] = {}

    def step(name: str, func, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        start = CLOCK()
        out = func(*args, **kwargs)
        times.setdefault(name, []).append((CLOCK() - start) / DEFAULT_BATCH)
        return out

    screen = {
        "gap": DEFAULTS.gap,
        "retention_threshold": DEFAULTS.retention_threshold,
        "excess_threshold": DEFAULTS.excess_threshold,
    }
    with single_blas():
        for _ in range(12):
            perms = step("permutations", permutations, rng, N, DEFAULT_BATCH)
            b = step("half counts, pair differences", panel.batch, perms)
            f = step("flips", pair_flips, b, gap=DEFAULTS.gap)
            c = step("flip counts", flip_counts, f)
            step("held-out endpoints", held_out_splits, b, gap=DEFAULTS.gap)
            step("disjoint-row r", disjoint_splits, b)
            step("McNemar", mcnemar_splits, b)
            step("cross-fit", crossfit_splits, b, f.eligible)
            step("three-reader screen", screen_splits, b, f, c, codes, lookup, **screen)
    return {name: float(np.median(values)) for name, values in times.items()}


if __name__ == "__main__":  # pragma: no cover
    main()
