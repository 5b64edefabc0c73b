"""The one reload rule the loaders share (benchmarks, ragscale, the matrix)."""

import pytest

from warehouse.reloads import reload_status


class Refused(Exception):
    pass


def refuse() -> Exception:
    return Refused("held elsewhere")


def test_nothing_held_loads_and_the_same_source_is_unchanged():
    assert reload_status(None, ("a", 1), replace=False, refusal=refuse) == "loaded"
    assert (
        reload_status(("a", 1), ("a", 1), replace=False, refusal=refuse) == "unchanged"
    )
    assert (
        reload_status(("a", 1), ("a", 1), replace=True, refusal=refuse) == "unchanged"
    )


def test_another_source_is_refused_unless_replace():
    with pytest.raises(Refused, match="held elsewhere"):
        reload_status(("a", 1), ("b", 1), replace=False, refusal=refuse)
    assert reload_status(("a", 1), ("b", 1), replace=True, refusal=refuse) == "replaced"
