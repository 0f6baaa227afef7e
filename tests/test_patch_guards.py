"""The guards of a hand-written change (source/scope.py) on real programs of kernels/, parsed by
libclang: each rejection names its guard's finding and the first offending line, and the changes a
patch may make (comments, a renamed local, an added device helper, a kernel's body) pass."""

from __future__ import annotations

import pytest

from rocm_perf.source.scope import changed_kernels, guard_patch
from conftest import KERNELS

HISTOGRAM = KERNELS / "histogram.cu"
GLOBAL_SIGNATURE = b"int n, unsigned int* __restrict__ bins,\n                                 int num_bins) {\n    const int stride"


def failed(before: bytes, after: bytes, path=HISTOGRAM, **kw) -> list[str]:
    return [v.reason for v in guard_patch(path, before, after, **kw) if not v.ok]


@pytest.fixture(scope="module")
def histogram() -> bytes:
    return HISTOGRAM.read_bytes()


def test_a_kernel_that_gained_a_parameter_is_named_with_its_line(histogram):
    after = histogram.replace(GLOBAL_SIGNATURE, GLOBAL_SIGNATURE.replace(b"int num_bins)", b"int num_bins, int extra)"), 1)
    reasons = failed(histogram, after)
    assert reasons[0] == "signature: histogram_global gained a parameter (line 29: int extra)"
    # the launch no longer matches it, which the parse says too
    assert any(r.startswith("does not build: line ") for r in reasons[1:])


def test_a_parameter_whose_type_or_restrict_changed_is_named(histogram):
    after = histogram.replace(b"const unsigned int* __restrict__ keys, int n, unsigned int* __restrict__ bins,\n"
                              b"                                 int num_bins) {\n    const int stride",
                              b"const unsigned int* keys, int n, unsigned int* __restrict__ bins,\n"
                              b"                                 int num_bins) {\n    const int stride", 1)
    assert failed(histogram, after) == [
        "signature: histogram_global parameter 1 (keys): const unsigned int *__restrict became const unsigned int * (line 28)"]


def test_a_host_change_names_its_line_and_declaration_unless_allowed(histogram):
    after = histogram.replace(b"constexpr int kLaunches = 10;", b"constexpr int kLaunches = 20;")
    assert failed(histogram, after) == ["host code changed (line 26: kLaunches)"]
    in_main = histogram.replace(b"for (int i = 0; i < kKeys; ++i) ++expected", b"for (int i = 1; i < kKeys; ++i) ++expected")
    assert failed(histogram, in_main) == ["host code changed (line 88: main)"]
    allowed = guard_patch(HISTOGRAM, histogram, after, allow_host_changes=True)
    assert all(v.ok for v in allowed)
    assert "correctness rests on the outputs alone" in next(v.reason for v in allowed if v.name == "device_code_only")


def test_a_broken_build_names_the_line(histogram):
    after = histogram.replace(b"atomicAdd(&bins[keys[i] % num_bins], 1u);", b"atomicAdd(&bins[keys[i] % num_bins], 1u)")
    assert failed(histogram, after) == ["does not build: line 32: expected ';' after expression"]


def test_what_a_patch_may_change_passes(histogram):
    comment = histogram.replace(b"    const int stride = gridDim.x", b"    // one stride per grid\n    const int stride = gridDim.x", 1)
    renamed = histogram.replace(b"for (int b = threadIdx.x; b < num_bins; b += blockDim.x) block_bins[b] = 0;",
                                b"for (int bin = threadIdx.x; bin < num_bins; bin += blockDim.x) block_bins[bin] = 0;")
    helper = histogram.replace(b"__global__ void histogram_global", b"__device__ inline unsigned bin_of(unsigned key, int bins) "
                               b"{ return key % bins; }\n\n__global__ void histogram_global", 1)
    helper = helper.replace(b"atomicAdd(&bins[keys[i] % num_bins], 1u);", b"atomicAdd(&bins[bin_of(keys[i], num_bins)], 1u);")
    for after in (comment, renamed, helper):
        assert after != histogram and failed(histogram, after) == []
    assert changed_kernels(histogram, renamed, HISTOGRAM) == ["histogram_shared"]
    assert changed_kernels(histogram, comment, HISTOGRAM) == ["histogram_global"]


def test_a_host_device_function_is_host_code():
    pipeline = (KERNELS / "pipeline.cu").read_bytes()
    after = pipeline.replace(b"return static_cast<float>(kRadius + 1 - distance)", b"return static_cast<float>(kRadius + 2 - distance)")
    assert failed(pipeline, after, KERNELS / "pipeline.cu") == ["host code changed (line 50: window_weight)"]
    layernorm = (KERNELS / "layernorm.cu").read_bytes()  # a __device__ helper's body is device code
    after = layernorm.replace(b"    int stride = blockDim.x / 2;", b"    int stride = blockDim.x >> 1;")
    assert failed(layernorm, after, KERNELS / "layernorm.cu") == []
