"""Audit statistics: panel arrays in, typed results out (``docs/statistics.md``).

Every statistic is a function of arrays (``RAW[m, n]``, ``COMP[m, n]``, a family
vector, token counts) that takes its seed and counts as arguments and returns a
frozen result whose ``to_dict()`` never contains NaN: an undefined value is
``None`` with a reason beside it. Only :mod:`analysis.panel` and
:mod:`analysis.audit` touch the warehouse; they import ``warehouse`` and nothing
else of ours.
"""

from __future__ import annotations
