"""Tunable constants (source/tunables.py) in real programs: a #define, a namespace-scope constexpr,
a kernel template's argument at its launches, the comment that declares one; a candidate changes
only the value's tokens, a value the code static_asserts against is a build failure with its line,
and bad names and values are one line each."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize.proposers.tunables import tunables_of
from rocm_perf.source.tunables import (check_only_values, combinations, declared_tunables, find_tunables,
                                       parse_tune_option, render_values)
from conftest import DATA, KERNELS

ITEMS = DATA / "programs" / "items_per_thread.cu"
TWIN = DATA / "programs" / "bench_twin.cu"


def test_a_namespace_constexpr_is_tuned_and_only_its_token_changes():
    path = KERNELS / "matmul_regblock.cu"
    data = path.read_bytes()
    [t] = find_tunables(path, data, {"kMicro": [2, 4, 8]})
    assert (t.kind, t.current, t.values, t.line, t.kernels) == ("constant", 4, (2, 8), 22, ("matmul_micro4x4",))
    after = render_values(data, [t], {"kMicro": 2})
    assert after == data.replace(b"constexpr int kMicro = 4;", b"constexpr int kMicro = 2;")
    assert all(v.ok for v in check_only_values(path, data, after, [t], {"kMicro": 2}))


def test_a_value_the_code_static_asserts_against_is_a_build_failure_with_its_line():
    path = KERNELS / "matmul_regblock.cu"
    data = path.read_bytes()
    [t] = find_tunables(path, data, {"kMicro": [3]})
    verdicts = check_only_values(path, data, render_values(data, [t], {"kMicro": 3}), [t], {"kMicro": 3})
    assert [v.ok for v in verdicts] == [True, False]
    assert verdicts[1].reason.startswith("does not build: line 66: static assertion failed")


def test_a_define_and_a_template_argument_declared_by_a_comment():
    [t] = find_tunables(TWIN, TWIN.read_bytes(), {"EXTRA_PERMILLE": [10, 50]})
    assert (t.kind, t.current, t.values) == ("define", 0, (10, 50))
    data = ITEMS.read_bytes()
    assert declared_tunables(data, ITEMS) == {"ITEMS": ([1, 2, 8], 31)}
    [items] = tunables_of(ITEMS, data, {})
    assert (items.kind, items.current, items.values, items.kernels) == ("template", 4, (1, 2, 8), ("scale_add",))
    after = render_values(data, [items], {"ITEMS": 8})
    assert after == data.replace(b"scale_add<4><<<", b"scale_add<8><<<")
    # --tune replaces the declared values
    [given] = tunables_of(ITEMS, data, {"ITEMS": [16]})
    assert given.values == (16,)


def test_a_change_beside_the_value_is_caught():
    path = KERNELS / "matmul_regblock.cu"
    data = path.read_bytes()
    [t] = find_tunables(path, data, {"kMicro": [2]})
    sneaky = render_values(data, [t], {"kMicro": 2}).replace(b"constexpr int kLaunches = 6;", b"constexpr int kLaunches = 1;")
    only = check_only_values(path, data, sneaky, [t], {"kMicro": 2})[0]
    assert not only.ok and only.reason == "tokens other than kMicro changed (line 26)"


def test_combinations_move_fewer_constants_first_and_leave_the_baseline_out():
    data = ITEMS.read_bytes()
    tunables = find_tunables(ITEMS, data, {"ITEMS": [2, 8], "kBlock": [32, 128]})
    combos = combinations(tunables)
    assert len(combos) == 3 * 3 - 1
    assert [len(c) for c in combos] == [1, 1, 1, 1, 2, 2, 2, 2]


@pytest.mark.parametrize("source, wanted, words", [
    (KERNELS / "histogram.cu", {"kBogus": [1]}, "histogram.cu: no tunable kBogus"),
    (KERNELS / "softmax.cu", {"BLOCK": [32]}, "softmax.cu:85: the launch of softmax_rows passes BLOCK as `kBlock`, not an "
                                               "integer literal; tune kBlock instead"),
    (KERNELS / "histogram.cu", {"HIP_CHECK": [1]}, "histogram.cu:12: HIP_CHECK is #defined as `(call)"),
])
def test_a_name_that_is_no_tunable_constant_is_one_line(source, wanted, words):
    with pytest.raises(RocmPerfError) as e:
        find_tunables(source, source.read_bytes(), wanted)
    assert str(e.value).startswith(words) and "\n" not in str(e.value)


@pytest.mark.parametrize("items, words", [
    (["kBlock=64,12x"], "--tune kBlock: '12x' is not an integer"),
    (["kBlock"], "--tune 'kBlock': expected NAME=V1,V2"),
    (["kBlock="], "--tune kBlock: no values to try"),
    (["2x=4"], "--tune '2x=4': expected NAME=V1,V2"),
])
def test_bad_tune_options_are_one_line(items, words):
    with pytest.raises(RocmPerfError) as e:
        parse_tune_option(items)
    assert str(e.value).startswith(words)


def test_a_declared_value_that_is_not_an_integer_names_its_line(tmp_path):
    path = tmp_path / "prog.cu"
    path.write_bytes(b"// rocm-perf: tune kBlock 64 big\nconstexpr int kBlock = 128;\n")
    with pytest.raises(RocmPerfError, match=r"^prog.cu:1: rocm-perf: tune kBlock: 'big' is not an integer$"):
        declared_tunables(path.read_bytes(), Path(path))
