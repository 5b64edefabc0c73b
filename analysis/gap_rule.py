"""The gap rule: one comparison for every statistic that asks "at least ``gap`` apart".

Notes
-----
docs/statistics.md section 0. A raw difference is *at least the gap* when
``difference >= gap - GAP_TOLERANCE * gap``: the float64 difference of two
means may sit a few ulps below the value it stands for (``0.35 - 0.30 =
0.04999999999999999`` on 100 rows), and a pair exactly 5pp apart is "at least
5pp apart". The tolerance is relative to the gap (1e-12), far above rounding
residue (a few 1e-17 for means in [0, 1]) and far below the smallest real
shortfall of scores that are k/n: with a decimal gap ``p/q``, a difference
``k/n`` below it falls short by at least ``1/(q n)``, more than ``1e-12 gap``
for every n below 10**10. So on k/n scores the rule is exact: it equals the
comparison of integer counts, ``|k_j - k_i| >= gap n``. On continuous scores a
difference within ``1e-12 gap`` below the gap also counts as reaching it.
"""

from __future__ import annotations

import numpy as np

#: Relative tolerance of the gap comparison (see the module notes).
GAP_TOLERANCE = 1e-12


def meets_gap(difference, gap: float):  # noqa: ANN001, ANN201 (scalar or array)
    """``difference >= gap`` exactly on k/n scores (NaN never meets it).

    Scalars give a Python ``bool``, arrays a boolean array.
    """
    threshold = gap - GAP_TOLERANCE * abs(gap)
    if np.ndim(difference) == 0:
        return bool(difference >= threshold)
    return np.asarray(difference) >= threshold


def separated(difference, gap: float):  # noqa: ANN001, ANN201
    """``|difference| >= gap`` under :func:`meets_gap` (a pair at least ``gap`` apart)."""
    return meets_gap(np.abs(difference), gap)
