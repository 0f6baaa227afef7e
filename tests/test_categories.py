"""Kernel categories: the rules table on the fixtures' kernel names and the names the issue lists."""

import pytest

from conftest import DATA
from rocm_perf.analysis.categories import CATEGORIES, OTHER, categorize
from rocm_perf.trace.load import load_trace
from rocm_perf.trace.names import demangle_symbols, short_name

ISSUE_NAMES = [
    ("ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)", "communication"),
    ("void rcclGenericKernel<1>(ncclDevComm*, unsigned long, ncclWork*)", "communication"),
    ("all_reduce_kernel<float>", "communication"),
    ("cross_device_reduce_1stage<half, 8>", "communication"),
    ("reduce_scatter_ring", "communication"),
    ("allgather_kernel", "communication"),
    ("triton_poi_fused_add_mul_0", "triton"),
    ("triton_red_fused_sum_1", "triton"),
    ("void ck::kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemm_xdl_cshuffle_v3<>>(ck::Argument)", "composable_kernel"),
    ("ck_tile::kentry<256, 2, ck_tile::GemmKernel<>>", "composable_kernel"),
    ("aiter::ck_moe_stage1_kernel", "moe"),
    ("aiter::gemm_a8w8_bpreshuffle", "aiter"),
    ("Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0", "gemm"),
    ("rocblas_gemm_ex_kernel", "gemm"),
    ("miopenSp3AsmConv_v21_1_3_gfx9_fp32_f3x2_stride1", "miopen"),
    ("naive_conv_nonpacked_fwd_nchw_float_double_float", "miopen"),
    ("MIOpenBatchNormFwdTrainSpatial", "normalization"),
    ("fmha_fwd_d128_bf16_batch", "attention"),
    ("paged_attention_ll4mi_QKV_mfma16_kernel<__hip_bfloat16>", "attention"),
    ("flash_fwd_splitkv_kernel", "attention"),
    ("_attn_fwd", "attention"),
    ("fused_moe_kernel", "moe"),
    ("moe_align_block_size_kernel", "moe"),
    ("void vllm::moe::topkGatingSoftmax<8>(float const*)", "moe"),
    ("dynamic_per_token_scaled_fp8_quant_kernel", "quantization"),
    ("rms_norm_kernel<c10::BFloat16>", "normalization"),
    ("layer_norm_fwd_kernel", "normalization"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, float)", "elementwise"),
    ("__amd_rocclr_copyBuffer", "memory"),
    ("__amd_rocclr_fillBufferAligned", "memory"),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float>>>", "reduction"),
    ("void cub::DeviceScanKernel<cub::AgentScanPolicy<>, int*, int*>", "scan_sort"),
    ("void rocprim::detail::onesweep_iteration_kernel<>", "scan_sort"),
    ("void fbgemm_gpu::split_embedding_backward_codegen_adagrad_unweighted_kernel_cta_per_row_1", "embedding"),
    ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<TensorListMetadata<2>>", "optimizer"),
    ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align4>", "gemm"),
    ("splitKreduce_kernel<float, float, float, float, true, true, false>", "gemm"),
    ("void vllm::rotary_embedding_kernel<c10::BFloat16, true>", "elementwise"),
    ("my_custom_kernel(float*)", OTHER),
]


@pytest.mark.parametrize("name,category", ISSUE_NAMES)
def test_issue_names(name, category):
    assert categorize(name) == category


def _categories(path):
    t = load_trace(path)
    demangle_symbols(t)
    return {short_name(s.display_name, 40): categorize(s.display_name, s.name) for s in t.symbols}


def test_fixture_names_legacy_rpd():
    cats = {}
    for f in ("matmul_result.rpd", "mytrace.rpd.gz"):
        t = load_trace(DATA / f)
        demangle_symbols(t)
        cats.update({s.display_name: categorize(s.display_name, s.name) for s in t.symbols})
    by_prefix = lambda p: {c for n, c in cats.items() if p in n}  # noqa: E731
    assert by_prefix("Cijk_") == {"gemm"}
    assert by_prefix("CatArrayBatchedCopy") == {"memory"}
    assert by_prefix("vllm::scaled_rms_norm_kernel") == {"normalization"}
    assert by_prefix("fused_add_rms_norm_kernel") == {"normalization"}  # despite Float8 parameters
    assert by_prefix("scaled_fp8_quant_kernel") == {"quantization"}
    assert by_prefix("FmhaFwdKernel") == {"attention"}  # a CK kernel, but attention first
    assert by_prefix("wvSpltK") == {"gemm"}
    assert by_prefix("reshape_and_cache") == {"quantization"}  # its Fp8KVCacheDataType variant quantizes as it copies
    assert by_prefix("rotary_embedding") == {"elementwise"}
    assert by_prefix("vectorized_elementwise_kernel") == {"elementwise"}
    assert by_prefix("rocprim::detail::single_scan_kernel") == {"scan_sort"}


def test_fixture_names_rocpd_and_csv():
    cats = _categories(DATA / "rocpd_v3_multistream.db")
    assert cats.pop("reduce_kernel") == "reduction" and set(cats.values()) == {OTHER}
    docs = _categories(DATA / "rocprofv3-csv" / "kernel_trace.csv")
    assert docs == {"addition_kernel<float>": "elementwise", "divide_kernel": "elementwise",
                    "multiply_kernel": "elementwise", "subtract_kernel": "elementwise"}


def test_category_list_is_complete():
    assert {c for _, c in ISSUE_NAMES} <= set(CATEGORIES)
