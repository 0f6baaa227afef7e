"""Outputs within a tolerance (optimize/output_tolerance.py) and the host runtime's kept copies
(rocm_perf_host/kept_copies.h): real builds keep each device-to-host copy's bytes with the element
type its destination names, cut at the limit and saying so; the comparison names the first element
outside the tolerance and the worst errors; bad --tolerance values are one line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rocm_perf.backends.host import HostBackend
from rocm_perf.backends.host_copies import KeptCopy
from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize.output_tolerance import REFERENCE_KEY, KeptOutputs, compare_copy, compare_stdout, tolerance_differ
from rocm_perf.tolerance import Tolerance, parse_tolerance

PROGRAM = r"""
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <cstdio>
__global__ void fill(float* f, double* d, int* i, __half* h, float4* v) {
    int t = threadIdx.x;
    f[t] = t * 0.5f; d[t] = t * 0.25; i[t] = -t; h[t] = __float2half(t * 1.0f); v[t] = make_float4(t, t, t, t);
}
int main() {
    float *f; double *d; int *i; __half *h; float4 *v;
    hipMalloc(&f, 256 * 4); hipMalloc(&d, 256 * 8); hipMalloc(&i, 256 * 4); hipMalloc(&h, 256 * 2); hipMalloc(&v, 256 * 16);
    fill<<<1, 256>>>(f, d, i, h, v);
    float hf[256]; double hd[256]; int hi[256]; __half hh[256]; float4 hv[256]; unsigned char raw[1024];
    hipMemcpy(hf, f, sizeof hf, hipMemcpyDeviceToHost);
    hipMemcpy(hd, d, sizeof hd, hipMemcpyDeviceToHost);
    hipMemcpy(hi, i, sizeof hi, hipMemcpyDeviceToHost);
    hipMemcpy(hh, h, sizeof hh, hipMemcpyDeviceToHost);
    hipMemcpy(hv, v, sizeof hv, hipMemcpyDeviceToHost);
    hipMemcpy((void*)raw, (const void*)f, sizeof raw, hipMemcpyDeviceToHost);
    hipMemcpy2D(raw, 16, f, 16, 16, 4, hipMemcpyDeviceToHost);
    std::printf("last %f\n", hf[255]);
    return 0;
}
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("kept")
    (d / "copies.cu").write_text(PROGRAM)
    return HostBackend().build(d / "copies.cu", d / "build").executable, d


def test_the_runtime_keeps_each_copy_with_the_element_type_its_destination_names(built):
    exe, d = built
    backend = HostBackend().keeping_copies(1 << 20)
    result = backend.profile([str(exe)], d / "all")
    assert result.returncode == 0
    copies = backend.take_kept_copies(d / "all")
    assert [(c.bytes, len(c.data), c.element) for c in copies] == [
        (1024, 1024, "float32"), (2048, 2048, "float64"), (1024, 1024, "int32"), (512, 512, "float16"),
        (4096, 4096, "float32"), (1024, 1024, ""), (64, 64, "")]
    assert np.frombuffer(copies[0].data, np.float32)[255] == 127.5
    assert np.frombuffer(copies[1].data, np.float64)[3] == 0.75
    assert not list((d / "all").glob("host_copies_*.bin"))  # taken: the bytes' files are gone
    plain = HostBackend()  # not asked: nothing kept, no file
    assert plain.profile([str(exe)], d / "none").returncode == 0
    assert plain.take_kept_copies(d / "none") == [] and not list((d / "none").glob("host_copies_*"))


def test_past_the_limit_copies_are_cut_and_the_comparison_says_what_it_did_not_compare(built, tmp_path):
    exe, d = built
    backend = HostBackend().keeping_copies(1500)
    backend.profile([str(exe)], d / "cut")
    copies = backend.take_kept_copies(d / "cut")
    assert [len(c.data) for c in copies[:3]] == [1024, 476, 0] and copies[1].cut == 2048 - 476
    keeper = KeptOutputs(tmp_path, Tolerance(1e-6, 0.0))
    reference = keeper(REFERENCE_KEY, copies, "last 127.5", ["a:1024", "b:2048", "c:1024"])
    assert reference["cut_bytes"] == sum(c.cut for c in copies)
    same = keeper("1-screen-0-C", copies, "last 127.5", ["a:1024", "x:2048", "c:1024"])
    assert same["within"] and "copy 2: its last 1572 bytes (past the bytes kept) were not compared" in same["notes"]


def test_a_candidate_within_the_tolerance_passes_with_its_worst_errors_and_one_outside_names_its_element(tmp_path):
    ref = np.linspace(-1, 1, 1000, dtype=np.float32)
    near = ref * np.float32(1 + 1e-6)
    far = ref.copy()
    far[437] += np.float32(0.01)
    counts = np.arange(10, dtype=np.uint32)
    keeper = KeptOutputs(tmp_path, Tolerance(1e-5, 1e-7))
    keeper(REFERENCE_KEY, [KeptCopy(4000, ref.tobytes(), "float32"), KeptCopy(40, counts.tobytes(), "uint32")],
           "total 12.5000\nrows 10", [])
    ok = keeper("1-screen-0-C", [KeptCopy(4000, near.tobytes(), "float32"), KeptCopy(40, counts.tobytes(), "uint32")],
                "total 12.5001\nrows 10", [])
    assert ok["within"] and 0 < ok["worst_rel"] <= 1.1e-6 and tolerance_differ({"tolerance": ok}) == ""
    bad = keeper("2-screen-0-C", [KeptCopy(4000, far.tobytes(), "float32"), KeptCopy(40, counts.tobytes(), "uint32")],
                 "total 12.5000\nrows 10", [])
    assert not bad["within"] and bad["first"].startswith("copy 1 (float32), element 437: ")
    assert tolerance_differ({"tolerance": bad}).startswith("outputs differ: copy 1 (float32), element 437: ")
    counted = keeper("3-screen-0-C", [KeptCopy(4000, ref.tobytes(), "float32"),
                                      KeptCopy(40, (counts + (counts == 7)).tobytes(), "uint32")], "total 12.5000\nrows 10", [])
    assert counted["first"] == "copy 2 (uint32), element 7: 8 != 7"  # integers must be equal
    printed = keeper("4-screen-0-C", [KeptCopy(4000, ref.tobytes(), "float32"), KeptCopy(40, counts.tobytes(), "uint32")],
                     "total 12.5000\nrows 11", [])
    assert printed["first"] == "standard output line 2: 'rows 11' vs 'rows 10' in the baseline"
    json.dumps(ok), json.dumps(bad)  # the ledger keeps them as JSON


def test_special_values_and_half_precision():
    tol = Tolerance(1e-3, 0.0)
    a = np.array([np.nan, np.inf, 1.0], np.float32).tobytes()
    assert compare_copy(1, a, a, "float32", tol)[0] == ""
    b = np.array([1.0, np.inf, 1.0], np.float32).tobytes()
    assert compare_copy(1, b, a, "float32", tol)[0] == "copy 1 (float32), element 0: 1 != nan"
    half = np.array([1.0, 2.0], np.float16).tobytes()
    assert compare_copy(1, half, half, "float16", tol) == ("", 0.0, 0.0)
    bf16 = (np.array([1.5, -2.0], np.float32).view(np.uint32) >> 16).astype(np.uint16).tobytes()
    assert compare_copy(1, bf16, bf16, "bfloat16", tol)[0] == ""
    assert compare_stdout("sum 1.0001e3 done", "sum 1000.0 done", tol) == ""
    assert compare_stdout("sum 1.1e3 done", "sum 1000.0 done", tol).startswith("standard output line 1")


@pytest.mark.parametrize("text, element, words", [
    ("rtol", "float32", "expected rtol=R,atol=A"),
    ("rtol=x", "float32", "'x' is not a number"),
    ("rtol=-1", "float32", "rtol must be a finite number >= 0"),
    ("rtol=0,atol=0", "float32", "give rtol or atol above 0"),
    ("gap=1", "float32", "expected rtol=R,atol=A"),
    ("rtol=1e-5", "float128", "--tolerance-type 'float128': choose one of"),
])
def test_bad_tolerances_are_one_line(text, element, words):
    with pytest.raises(RocmPerfError) as e:
        parse_tolerance(text, element)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_a_tolerance_reads_back_as_it_is_written():
    tol = parse_tolerance("atol=1e-8, rtol=1e-5")
    assert tol.spec == "rtol=1e-05,atol=1e-08" and parse_tolerance(tol.spec) == tol
