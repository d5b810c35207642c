"""One way to print a duration (kernelgate.units), golden, and every renderer uses it."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from real_data import GOLDEN, check_golden

from kernelgate.units import DASH, device_time, duration, limit

# kernel and layer times, a forward, a pipeline, cold-start phases and totals, a floor, changes
VALUES = [0.0, 0.04, 0.5, 1.0, 3.04, 31.24, 100.66, 999.9, 999.96, 1000.0, 1173.9, 1274.1, 9999.6,
          12345.0, 99996.0, 123456.0, 250000.0, 999960.0, 2640389.0, 12.3e6, 3600e6, -0.04, -100.2,
          -1500.0, -2.5e6]  # fmt: skip


def test_golden_durations() -> None:
    rows = ["value (µs) | duration | signed | 3 digits | limit"]
    rows += [
        f"{v!r} | {duration(v)} | {duration(v, signed=True)} | {duration(v, digits=3)} | {limit(v)}"
        for v in VALUES
    ]
    check_golden(GOLDEN / "units.txt", "\n".join(rows) + "\n")


def test_no_value_and_non_finite_values() -> None:
    assert duration(None) == DASH == duration(None, signed=True)
    assert duration(math.nan) == "nan µs" and duration(math.inf, signed=True) == "+inf µs"


def test_the_cold_start_of_the_issue_reads_in_seconds() -> None:
    assert duration(2640389.0) == "2.640 s"  # was "2640389.0 µs"


@given(st.floats(min_value=-1e10, max_value=1e10, allow_nan=False))
def test_every_duration_has_its_unit_and_the_resolution_of_its_magnitude(us: float) -> None:
    text = duration(us)
    number, unit = text.split(" ")
    value = float(number)
    scale = {"µs": 1.0, "ms": 1e3, "s": 1e6}[unit]
    assert (
        abs(value * scale - us) <= 0.05 * scale + 1e-9  # one decimal in µs (1.25 -> 1.2: float error)
        if unit == "µs"
        else abs(value * scale - us) <= 5e-4 * max(abs(us), scale)
    )
    if unit == "µs":
        assert re.fullmatch(r"-?\d{1,3}\.\d", number)
    else:  # four significant digits, and below 1000 unless seconds
        assert len(number.lstrip("-").replace(".", "").lstrip("0")) <= 4 or unit == "s"
        assert abs(value) < 1000 or unit == "s"
        assert abs(value) >= 1 or value == 0


@pytest.mark.parametrize(
    ("arch", "name"), [("sm90-nvidia-h200", "GPU time"), ("cpu-x86-64-amd-epyc", "CPU time")]
)
def test_what_the_profiled_time_is_called(arch: str, name: str) -> None:
    assert device_time(arch) == name


def test_several_durations_read_in_the_unit_of_the_largest() -> None:
    from kernelgate.units import in_one_unit

    assert in_one_unit([101.6, 102.0, 101.7]) == (["101.6", "102.0", "101.7"], "µs")
    assert in_one_unit([1111544.0, 719199.0]) == (["1.112", "0.7192"], "s")  # a cold start's build phase
    assert in_one_unit([1519.7, 998.0, -4.0]) == (["1.520", "0.9980", "-0.004000"], "ms")
    assert in_one_unit([]) == ([], "µs")
