"""Simulated panels for the analysis tests (binary or continuous, known structure)."""

from __future__ import annotations

import numpy as np


def binary_panel(m: int = 20, n: int = 500, seed: int = 7, families: int = 8):
    """Readers with spread raw accuracy and reader-specific rescue/damage rates."""
    rng = np.random.default_rng(seed)
    ability = np.linspace(0.35, 0.8, m)
    difficulty = rng.normal(0, 1, n)
    logit = np.log(ability / (1 - ability))[:, None] - 0.8 * difficulty[None, :]
    raw = (rng.random((m, n)) < 1 / (1 + np.exp(-logit))).astype(float)
    rescue = rng.uniform(0.15, 0.35, m)[:, None]
    damage = rng.uniform(0.1, 0.4, m)[:, None]
    u = rng.random((m, n))
    comp = np.where(raw == 1, (u >= damage).astype(float), (u < rescue).astype(float))
    readers = tuple(f"reader-{k:02d}" for k in range(m))
    fams = tuple(f"family-{k % families}" for k in range(m))
    return raw, comp, readers, fams


def continuous_panel(m: int = 12, n: int = 200, seed: int = 11):
    """F1-like scores on a grid of simple fractions (ties happen)."""
    raw_b, comp_b, readers, fams = binary_panel(m, n, seed)
    rng = np.random.default_rng(seed + 1)
    grid = np.array([0.0, 0.25, 1 / 3, 0.5, 2 / 3, 0.8, 1.0])
    raw = np.where(raw_b == 1, 1.0, grid[rng.integers(0, 6, (m, n))])
    comp = np.where(comp_b == 1, 1.0, grid[rng.integers(0, 6, (m, n))])
    return raw, comp, readers, fams
