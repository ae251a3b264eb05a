"""Charts drawn from numbers a database may hold that log axes cannot place."""

from __future__ import annotations

import math

from tracedb import charts


def test_a_roofline_leaves_out_what_is_not_a_positive_finite_number():
    """An infinite peak (stored before peaks were checked), a NaN or a negative point: left out of
    the roofline, never an error; nothing left to draw is no chart."""
    svg = charts.roofline_chart("t", ["a", "b", "c"], [(1.0, 2.0), (math.inf, 3.0), (float("nan"), 1.0)],
                                [(math.inf, 3.0), (100.0, 2.0), (-1.0, 2.0)])
    assert svg.startswith("<svg") and "inf" not in svg.lower() and "nan" not in svg.lower()
    assert svg.count("<circle") == 1  # the one point that has a place
    assert charts.roofline_chart("t", ["a"], [(float("nan"), 2.0)], [(math.inf, 3.0)]) == ""
