"""`rocm-perf compare` on the real A100/V100 pair, across formats, and its statistics."""

from __future__ import annotations

import gzip
import json
import math
from collections import Counter
from decimal import Decimal

import numpy as np
import pytest

from conftest import DATA
from host_programs import built  # noqa: F401  (session fixture)
from rocm_perf.analysis.compare import comparability, compare_traces, match_kernels
from rocm_perf.analysis.rank_test import holm_adjusted, mann_whitney
from rocm_perf.cli import main
from rocm_perf.trace.load import load_trace
from rocm_perf.trace.model import KernelSymbol, Trace
from rocm_perf.trace.rocpd_write import write_rocpd

TORCH = DATA / "torch-trace"
CONTROL = TORCH / "a100_control.json.gz"
TEST = TORCH / "a100_test.json.gz"
MI250 = TORCH / "mi250_minitoy_train_ROCm6_2_kineto.json.gz"
SPEC_KEYS = {"name", "a_total_ns", "b_total_ns", "delta_ns", "a_calls", "b_calls", "significant", "status"}


def _kernels(path) -> tuple[Counter, Counter]:
    """Per kernel name: total ns and calls, straight from the JSON."""
    total, calls = Counter(), Counter()
    for e in json.loads(gzip.decompress(path.read_bytes()), parse_float=Decimal)["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") == "kernel":
            total[e["name"]] += int(Decimal(e["dur"]) * 1000)
            calls[e["name"]] += 1
    return total, calls


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    out = tmp_path_factory.mktemp("compare")
    return out


def test_the_a100_pair(pair, capsys):
    assert main(["compare", str(CONTROL), str(TEST), "--out", str(pair)]) == 0
    printed = capsys.readouterr().out
    doc = json.loads((pair / "compare.json").read_text())
    a_total, a_calls = _kernels(CONTROL)
    b_total, b_calls = _kernels(TEST)
    assert doc["total"]["a_ns"] == sum(a_total.values()) and doc["total"]["b_ns"] == sum(b_total.values())
    by_status = {s: {k["name"] for k in doc["kernels"] if k["status"] == s} for s in ("new", "missing")}
    # exact names first; names that differ only in their parameter lists matched by short name
    matched_short = {k["b_name"] for k in doc["kernels"] if "b_name" in k}
    assert by_status["new"] == set(b_total) - set(a_total) - matched_short
    assert by_status["missing"] == set(a_total) - set(b_total) - {k["name"] for k in doc["kernels"] if "b_name" in k}
    assert len(by_status["new"]) > 0 and len(by_status["missing"]) > 0
    for k in doc["kernels"]:
        assert SPEC_KEYS <= set(k)
        assert k["delta_ns"] == k["b_total_ns"] - k["a_total_ns"]
        b_name = k.get("b_name", k["name"])
        assert (k["a_calls"], k["a_total_ns"]) == (a_calls.get(k["name"], 0), a_total.get(k["name"], 0)) \
            or k["status"] == "new"
        assert (k["b_calls"], k["b_total_ns"]) == (b_calls.get(b_name, 0), b_total.get(b_name, 0)) \
            or k["status"] == "missing"
        if k["status"] in ("new", "missing"):
            assert k["significant"] is None
        else:
            assert isinstance(k["significant"], bool)
            assert (k["status"] in ("faster", "slower")) == k["significant"]
            if k["significant"]:
                assert k["p_holm"] < 0.05 and (k["status"] == "slower") == (k["b_median_ns"] > k["a_median_ns"])
    assert sum(k["a_total_ns"] for k in doc["kernels"]) == doc["total"]["a_ns"]
    # the pair is not a like-for-like comparison, and compare says so first
    differing = {d["key"] for d in doc["comparability"] if d["blocking"]}
    assert {"gpu_products", "world_size"} <= differing
    assert printed.index("Comparability") < printed.index("GPU time")
    assert "Tesla V100-SXM2-16GB" in printed
    md = (pair / "compare.md").read_text()
    assert md.startswith("# Profile comparison") and "## Significant changes" in md and "## New in B" in md


def test_strict_refuses_the_pair(capsys):
    assert main(["compare", str(CONTROL), str(TEST), "--strict"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not comparable" in err and "gpu_products" in err


def test_fail_on_regression_exit_status(capsys):
    assert main(["compare", str(CONTROL), str(TEST), "--fail-on-regression", "5", "--json"]) == 1
    captured = capsys.readouterr()
    assert "regressions beyond 5 %" in captured.err and "total GPU time +79.5 %" in captured.err
    doc = json.loads(captured.out)
    assert doc["regression_check"]["regressions"]
    # the same profile against itself: nothing changed, nothing to fail on
    assert main(["compare", str(CONTROL), str(CONTROL), "--fail-on-regression", "0", "--json"]) == 0
    same = json.loads(capsys.readouterr().out)
    assert {k["status"] for k in same["kernels"]} == {"same"}
    assert all(k["p_value"] == 1.0 for k in same["kernels"]) and same["comparability"] == []


def test_profiles_with_nothing_in_common_are_one_line(capsys):
    db = DATA / "rocpd_v3_multistream.db"
    assert main(["compare", str(db), str(MI250)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no kernel in common" in err and str(db) in err


def test_inputs_of_different_formats(tmp_path, capsys):
    """A rocpd baseline against the PyTorch trace it was written from: the same numbers."""
    trace = load_trace(MI250)
    db = write_rocpd(trace, tmp_path / "mi250.db")
    assert main(["compare", str(db), str(MI250), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["total"]["a_ns"] == doc["total"]["b_ns"] == trace.runtime_ns
    assert {k["status"] for k in doc["kernels"]} == {"same"}
    formats = next(d for d in doc["comparability"] if d["key"] == "format")
    assert (formats["a"], formats["b"], formats["blocking"]) == ("rocpd-v3", "kineto-json", False)


def test_a_real_shift_is_found_and_noise_is_not():
    rng = np.random.default_rng(7)
    sym = [KernelSymbol("_Z4gemmv", "gemm()"), KernelSymbol("_Z4normv", "norm()"), KernelSymbol("_Z3oldv", "old()")]

    def trace(gemm_scale: float, with_old: bool) -> Trace:
        durations = np.concatenate([rng.normal(100_000 * gemm_scale, 3_000, 200), rng.normal(20_000, 600, 200)])
        kernels = [0] * 200 + [1] * 200
        if with_old:
            durations = np.append(durations, [5_000.0])
            kernels.append(2)
        start = np.arange(len(kernels)) * 200_000
        return Trace.from_rows(start=start, end=start + durations.astype(np.int64), kernel=kernels, symbols=sym)

    c = compare_traces(trace(1.0, True), trace(1.10, False), critical_path=False)
    status = {k.name: k.status for k in c.kernels}
    assert status == {"gemm()": "slower", "norm()": "same", "old()": "missing"}
    assert 1.08 < next(k for k in c.kernels if k.name == "gemm()").median_ratio < 1.12
    # twenty A/A comparisons of a noisy kernel: at alpha 0.05 over the family, (almost) never "changed"
    changed = sum(k.status != "same" for _ in range(20) for k in compare_traces(trace(1.0, False), trace(1.0, False),
                                                                                  critical_path=False).kernels)
    assert changed <= 1


def test_mann_whitney_exact_values():
    assert mann_whitney([1, 2, 3], [4, 5, 6]) == pytest.approx(2 / 20)  # 2 of C(6,3) orderings as extreme
    assert mann_whitney([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]) == pytest.approx(2 / 252)
    assert mann_whitney([1, 2], [3, 4]) == pytest.approx(2 / 6)
    assert mann_whitney([5, 5, 5], [5, 5, 5]) == 1.0
    assert mann_whitney([], [1.0]) == 1.0
    # large samples: the textbook normal approximation with continuity correction (no ties here)
    rng = np.random.default_rng(3)
    a, b = rng.normal(0, 1, 40), rng.normal(0.5, 1, 35)
    ranks = np.argsort(np.argsort(np.concatenate([a, b]))) + 1
    u = ranks[:40].sum() - 40 * 41 / 2
    z = (abs(u - 40 * 35 / 2) - 0.5) / math.sqrt(40 * 35 * 76 / 12)
    assert mann_whitney(a, b) == pytest.approx(math.erfc(z / math.sqrt(2)), rel=1e-9)
    # and, at 25 + 25 (still exact), the exact p is close to that approximation
    a, b = a[:25], b[:25]
    ranks = np.argsort(np.argsort(np.concatenate([a, b]))) + 1
    z = (abs(ranks[:25].sum() - 25 * 26 / 2 - 25 * 25 / 2) - 0.5) / math.sqrt(25 * 25 * 51 / 12)
    assert mann_whitney(a, b) == pytest.approx(math.erfc(z / math.sqrt(2)), rel=0.1)
    assert holm_adjusted([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_short_name_matching_and_comparability_rules():
    pairs = match_kernels(["void k<1>(float*)", "only_a()"], ["void k<1>(double*)", "only_b()"])
    assert ("void k<1>(float*)", "void k<1>(double*)") in pairs
    assert ("only_a()", None) in pairs and (None, "only_b()") in pairs
    diffs = comparability({"hostname": "a", "rocm_version": None, "format": "x"},
                          {"hostname": "b", "rocm_version": "7.0", "format": "y"})
    by_key = {d.key: d.blocking for d in diffs}
    assert by_key == {"hostname": True, "rocm_version": False, "format": False}


def test_meta_fields_take_part(capsys):
    argv = ["compare", str(MI250), str(MI250), "--meta-a", "base_image=rocm/pytorch:6.2",
            "--meta-b", "base_image=rocm/pytorch:7.0", "--strict"]
    assert main(argv) == 2
    assert "base_image" in capsys.readouterr().err


def test_the_optimizer_report_uses_the_same_comparison(tmp_path, built):  # noqa: F811
    """report.md's before/after table: original (B) against final (C) rounds of the final check."""
    from rocm_perf.backends.host import HostBackend
    from rocm_perf.optimize.artifacts import _before_after_markdown, before_after

    program = str(built("roctx_phases"))
    for i in range(2):
        for role in ("B", "C"):
            result = HostBackend().profile([program], tmp_path / "baseline" / "profiles" / f"final-{i}-{role}")
            assert result.returncode == 0
    doc = before_after(tmp_path)
    original = [load_trace(db) for db in sorted((tmp_path / "baseline" / "profiles").glob("final-*-B/*.db"))]
    assert doc["total"]["a_ns"] == sum(t.runtime_ns for t in original)
    calls = {k["name"]: (k["a_calls"], k["b_calls"]) for k in doc["kernels"]}
    assert calls == {"fill(float*, float, int)": (8, 8), "scale(float*, float, int)": (14, 14),
                     "copy_back(float const*, float*, int)": (2, 2)}
    markdown = "\n".join(_before_after_markdown(doc))
    assert "## Before / after, per kernel" in markdown and "fill(float*, float, int)" in markdown
    assert before_after(tmp_path / "nowhere") is None
