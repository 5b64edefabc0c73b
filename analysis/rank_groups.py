"""Rank groups: readers whose order the data cannot resolve (section 13).

Notes
-----
docs/statistics.md section 13. Per panel and condition (raw, compressed), from
the row bootstrap's draws (section 2's ``row`` stream: ``default_rng(seed)``,
``integers(0, n, (draws, n))``, every reader in every draw), each reader
pair's difference of resampled means ``mu_j - mu_i`` gets its percentile
interval at the audit's level. A pair is *resolved* when that interval
excludes 0 (``low > 0`` or ``high < 0``) and *unresolved* otherwise (an
interval touching 0 is unresolved). Rank groups are the connected components
of the unresolved pairs: two readers share a group when a chain of unresolved
pairs joins them, so every reader of one group is resolved from every reader
of another only through the chain's ends (a group can hold two readers whose
own pair is resolved; ``unresolved_pairs`` counts the pairs). Groups are
listed best first (by their best full-sample mean), readers inside a group by
full-sample mean, descending, ties in reader order; ``group_of`` numbers them
from 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from analysis.bootstrap import generator
from analysis.multiplicity import CONDITIONS
from analysis.results import ResultMixin, StatRow, percentile_interval
from analysis.retention import resampled_means
from analysis.splits import pair_indices


@dataclass(frozen=True)
class RankGroups(ResultMixin):
    """One condition's rank groups and the pair intervals they come from."""

    condition: str
    draws: int
    seed: int | None
    level: float
    groups: list[list[str]]
    group_of: dict[str, int]
    pairs: int
    unresolved_pairs: int
    pair_intervals: list[dict[str, Any]]

    def stat_rows(self) -> list[StatRow]:
        counts = self.pick("groups", "pairs", "unresolved_pairs", "level", "draws")
        rows = [
            StatRow(
                f"rank_groups_{self.condition}", float(len(self.groups)), counts=counts
            )
        ]
        rows += [
            StatRow(
                f"rank_group_{self.condition}[{reader}]",
                float(group),
                counts={"members": self.groups[group - 1]},
            )
            for reader, group in self.group_of.items()
        ]
        return rows


def components(m: int, links: Sequence[tuple[int, int]]) -> list[int]:
    """Component label (smallest member index) of each of ``m`` nodes."""
    parent = list(range(m))

    def root(k: int) -> int:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    for i, j in links:
        a, b = root(i), root(j)
        if a != b:
            parent[max(a, b)] = min(a, b)
    return [root(k) for k in range(m)]


def group_readers(
    means: np.ndarray, readers: Sequence[str], links: Sequence[tuple[int, int]]
) -> list[list[str]]:
    """Components of ``links``, best first, readers by mean descending (ties in order)."""
    labels = components(len(readers), links)
    order = sorted(range(len(readers)), key=lambda k: (-means[k], k))
    groups: dict[int, list[str]] = {}
    for k in order:  # first member seen is the group's best reader
        groups.setdefault(labels[k], []).append(readers[k])
    return list(groups.values())


def rank_groups(
    raw: np.ndarray,
    comp: np.ndarray,
    readers: Sequence[str],
    *,
    draws: int,
    seed: int,
    level: float,
) -> list[RankGroups]:
    """Rank groups under raw and compressed scores from the row bootstrap's draws."""
    m, n = raw.shape
    lo, hi = pair_indices(m)
    resampled, _ = resampled_means(generator(seed), [raw, comp], None, draws)
    out = []
    for condition, x, boot in zip(CONDITIONS, (raw, comp), resampled, strict=True):
        intervals, links = [], []
        for i, j in zip(lo.tolist(), hi.tolist(), strict=True):
            ends = percentile_interval(boot[:, j] - boot[:, i], level)
            resolved = ends.defined and (ends.low > 0 or ends.high < 0)
            if not resolved:
                links.append((i, j))
            intervals.append(
                {
                    "reader_a": readers[i],
                    "reader_b": readers[j],
                    "interval": ends,
                    "resolved": bool(resolved),
                }
            )
        groups = group_readers(x.mean(axis=1), readers, links)
        group_of = {r: k + 1 for k, members in enumerate(groups) for r in members}
        out.append(
            RankGroups(
                condition=condition,
                draws=draws,
                seed=seed,
                level=level,
                groups=groups,
                group_of={r: group_of[r] for r in readers},
                pairs=int(lo.size),
                unresolved_pairs=len(links),
                pair_intervals=intervals,
            )
        )
    return out
