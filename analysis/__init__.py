"""Audit statistics: panel arrays in, typed results out (``docs/statistics.md``).

Every statistic is a function of arrays (``RAW[m, n]``, ``COMP[m, n]``, a family
vector, token counts) that takes its seed and counts as arguments and returns a
frozen result whose ``to_dict()`` never contains NaN: an undefined value is
``None`` with a reason beside it; its defaults are the fields of
:class:`analysis.settings.AuditSettings`, passed as required keyword arguments.
Only the readers (:mod:`analysis.panel`, :mod:`analysis.selection_outcomes`),
:mod:`analysis.panel_definitions`, the writer (:mod:`analysis.store`) and the entry
point (:mod:`analysis.audit`) open the warehouse; analysis/ imports nothing of ours
but ``warehouse``.
"""

from __future__ import annotations
