"""How reports print numbers (ragscale's one-decimal "pp"/"%", never "-0.0")."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.formatting import NA, fixed, is_number, num, pct, pp, signed


@pytest.mark.parametrize(
    ("value", "want"),
    [(1, True), (0.5, True), (np.float64(2.0), True), (np.int64(3), True),
     ("1.5", True), (True, False), (False, False), (None, False), ("x", False),
     (float("nan"), False), (float("inf"), False), ([1], False)],
)  # fmt: skip
def test_is_number(value, want):
    assert is_number(value) is want


def test_fixed_and_signed_never_print_minus_zero():
    assert fixed(-0.04) == "0.0" and fixed(-0.05001) == "-0.1"
    assert fixed(0.04) == "0.0" and fixed(1.25, 2) == "1.25"
    assert fixed(-0.0004, 3) == "0.000" and fixed(-0.0006, 3) == "-0.001"
    assert fixed(2.0) == "2.0" and fixed(-12.34) == "-12.3"
    assert signed(1.2) == "+1.2" and signed(-1.2) == "-1.2"
    assert signed(0.04) == "0.0" and signed(-0.04) == "0.0"
    assert signed(0.0004, 3) == "0.000" and signed(0.0006, 3) == "+0.001"


def test_pp_pct_num_and_the_missing_text():
    assert pp(0.1234) == "12.3pp" and pp(-0.0004) == "0.0pp" and pp(1) == "100.0pp"
    assert pct(0.615) == "61.5%" and pct(-0.5) == "-50.0%"
    assert num(0.12345) == "0.123" and num(2, 1) == "2.0" and num(-0.0001) == "0.000"
    assert NA == "not admissible"
    for f in (pp, pct, num):
        assert f(None) == "not admissible" and f(float("nan")) == "not admissible"
        assert f(True) == "not admissible" and f("abc", missing="-") == "-"
