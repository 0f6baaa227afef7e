"""Trip counts: the closed form against a literal simulation, and libclang's constant evaluation."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rocm_perf.source import analyze_bytes
from rocm_perf.source.trip_count import simulate_trip_count, trip_count


COMPARES = ["<", "<=", ">", ">=", "!="]
STEPS = ["+=", "-=", "*=", "/=", "<<=", ">>="]


@settings(max_examples=600, deadline=None)
@given(
    start=st.integers(-300, 300),
    bound=st.integers(-300, 300),
    compare=st.sampled_from(COMPARES),
    step_op=st.sampled_from(STEPS),
    step=st.integers(-9, 9),
    width=st.sampled_from([(8, True), (8, False), (16, True), (32, True), (32, False)]),
)
def test_trip_count_equals_simulation(start, bound, compare, step_op, step, width):
    bits, signed = width
    expected = simulate_trip_count(start, compare, bound, step_op, step, bits=bits, signed=signed)
    assert trip_count(start, compare, bound, step_op, step, bits=bits, signed=signed) == expected


@settings(max_examples=200, deadline=None)
@given(start=st.integers(-(2**31), 2**31 - 1), bound=st.integers(-(2**31), 2**31 - 1), step=st.integers(1, 2**20))
def test_closed_form_handles_long_loops(start, bound, step):
    """Counts too long to simulate come from the closed form, checked against arithmetic."""
    count = trip_count(start, "<", bound, "+=", step)
    if start >= bound:
        assert count == 0
    elif start + ((bound - start + step - 1) // step) * step > 2**31 - 1:
        assert count is None  # the final increment would overflow int
    else:
        assert count == (bound - start + step - 1) // step


def test_known_headers():
    assert trip_count(-4, "<=", 4, "+=", 1) == 9
    assert trip_count(0, "<", 16, "+=", 1) == 16
    assert trip_count(32, ">", 0, ">>=", 1) == 6
    assert trip_count(0, "<", 10, "-=", 1) is None  # runs until it overflows
    assert trip_count(0, "!=", 7, "+=", 2) is None  # steps over the bound
    assert trip_count(250, "<", 300, "+=", 10, bits=8, signed=False) is None  # wraps an unsigned char


HEADERS = {
    # header -> the count libclang's evaluation plus the simulation must find
    "for (int i = -RADIUS; i <= RADIUS; ++i)": 9,
    "for (int i = 0; i < TILE; i++)": 16,
    "for (int off = 32; off > 0; off >>= 1)": 6,
    "for (int i = kStart; i < kStop; i += kStep)": 4,
    "for (unsigned u = 10u; u > 2u; u -= 4u)": 2,
    "for (unsigned v = 10u; v >= 2u; v -= 4u)": None,  # 2 - 4 wraps around: never ends
    "for (long long i = 1; i <= (1LL << 40); i *= 2)": 41,
    "for (int i = 0; 3 * TILE > i; i = i + 4)": 12,
    "for (short s = 100; s != 0; s -= 25)": 4,
}


def test_evaluated_headers_in_a_kernel(tmp_path):
    lines = ["#include <hip/hip_runtime.h>", "#define RADIUS 4", "#define TILE 16",
             "constexpr int kStart = 3, kStop = 15, kStep = 3;", "__global__ void k(float* out) {"]  # fmt: skip
    lines += [f"    {header} out[0] += 1.0f;" for header in HEADERS]
    lines += ["}"]
    path = tmp_path / "headers.cu"
    a = analyze_bytes(path, "\n".join(lines).encode())
    found = {a.data[l.start : l.body_start].decode().strip(): l.trip_count for l in a.loops}
    assert found == HEADERS
