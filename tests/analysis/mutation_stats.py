"""Let mutmut see which tests read a shared (cached or module-scoped) result.

mutmut 3 records, while it collects stats, which test calls which function, and
later runs only those tests against a mutant of that function. A result computed
once and shared (``test_reference.audited``, a module fixture) is charged to the
first test that asks for it, so a mutant would never meet the later tests that
check its other fields. While mutmut collects stats (``MUTANT_UNDER_TEST=stats``)
those caches are bypassed and module fixtures become function fixtures; in every
other run (the default suite, each mutant's run) they are shared as before.
"""

from __future__ import annotations

import os


def collecting_stats() -> bool:
    """True while mutmut records which functions each test calls."""
    return os.environ.get("MUTANT_UNDER_TEST") == "stats"


def module_scope(fixture_name: str, config: object) -> str:
    """A dynamic pytest scope: ``module``, or ``function`` while mutmut collects stats."""
    del fixture_name, config
    return "function" if collecting_stats() else "module"


def under_mutmut() -> bool:
    """True in any mutmut run (stats, clean run, a mutant): it may run a subset of a module."""
    return "MUTANT_UNDER_TEST" in os.environ
