"""What kind of scores a panel holds (docs/statistics.md section 0)."""

from __future__ import annotations

import numpy as np


def is_binary(*arrays: np.ndarray) -> bool:
    """Every score of every array is exactly 0 or 1 (EM, judged correct); else continuous."""
    return all(bool(np.isin(array, (0.0, 1.0)).all()) for array in arrays)
