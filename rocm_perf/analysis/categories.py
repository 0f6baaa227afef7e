"""ROCm-native kernel categories from kernel names: one ordered table of rules, first match wins.

To add a category or teach an existing one a new library, add a pattern to RULES. Order matters
where names overlap: an attention kernel built with composable kernel (`ck_tile::FmhaFwdKernel`)
is `attention`, a Triton kernel that fuses a norm is `normalization`, and plain CK GEMMs are
`composable_kernel`, not the generic GEMM bucket; a rotary embedding is `elementwise`, not `embedding`, and fbgemm's embedding kernels are `embedding`, not GEMMs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rocm_perf.trace.names import short_name

OTHER = "other"


@dataclass(frozen=True)
class Rule:
    category: str
    pattern: re.Pattern[str]
    why: str  # what the pattern recognises, for people extending the table


def _rule(category: str, regex: str, why: str) -> Rule:
    return Rule(category, re.compile(regex, re.IGNORECASE), why)


RULES: list[Rule] = [
    _rule("communication", r"rccl|nccl|all_?reduce|reduce_?scatter|all_?gather|all_?to_?all|sendrecv|\bcross_device",
          "RCCL and collective kernels"),
    _rule("attention", r"fmha|paged_?attention|flash|attention|_attn_|attn_fwd|attn_bwd|mha_|unified_attention",
          "FMHA (CK, AITER), paged attention, flash attention, Triton attention"),
    _rule("moe", r"moe|topk_?softmax|expert", "fused MoE, routing (top-k softmax), expert GEMMs"),
    _rule("quantization", r"quant|fp8|float8|mxfp4|_int8|int8_|i8gemm|scaled_mm|dynamic_scaled",
          "quantize/dequantize, FP8/INT8 scaling"),
    _rule("normalization", r"rms_?norm|layer_?norm|group_?norm|batch_?norm|instance_?norm|batchnorm",
          "RMSNorm, LayerNorm, BatchNorm (incl. fused add+norm)"),
    _rule("aiter", r"aiter", "AMD AITER library kernels"),
    _rule("triton", r"^triton_|\btriton\b|_triton_", "Triton-generated kernels (triton_poi_/red_/per_...)"),
    _rule("composable_kernel", r"\bck::|\bck_tile::|^_ZN2ck|^_ZN7ck_tile|device_gemm_xdl|kernel_gemm_xdl",
          "composable kernel (ck::, ck_tile::)"),
    _rule("embedding", r"(?<!rotary_)embedding|embedding_?bag|EmbeddingBag",
          "embedding lookups and their backward (not rotary embeddings: elementwise)"),
    _rule("gemm", r"^Cijk_|\bCijk_|gemm|rocblas|hipblaslt|wvSplt|matmul|_MT\d+x\d+x\d+|cutlass|gemv|splitK",
          "hipBLASLt/rocBLAS Tensile (Cijk_...), skinny GEMMs (wvSplitK), split-K reductions, other GEMMs"),
    _rule("miopen", r"miopen|naive_conv|igemm_|winograd|conv_?fwd|conv_?bwd|convolution|\bconv\d?d",
          "MIOpen convolutions and solvers"),
    _rule("optimizer", r"multi_tensor_apply|fused_?adam|\badam|adagrad|lamb_|_sgd_|sgd_kernel",
          "fused optimizer steps (multi-tensor apply, Adam, Adagrad, SGD)"),
    _rule("memory", r"__amd_rocclr_|copyBuffer|fillBuffer|memcpy|memset|copy_kernel|CatArrayBatchedCopy|"
          r"direct_copy|reshape_and_cache|index_?select|indexSelect|gather_kernel|scatter_kernel|transpose",
          "copies, fills (HIP runtime blits), cache writes, gathers/transposes"),
    _rule("reduction", r"reduce_kernel|reduction|block_?reduce|DeviceReduce|DeviceSegmentedReduce",
          "sums, means, norms over an axis (at::native::reduce_kernel, rocprim/cub reductions)"),
    _rule("scan_sort", r"rocprim::|\bcub::|hipcub::|radix_?sort|sort_kernel|DeviceScan|scan_kernel|bitonic",
          "prefix sums and sorts (rocPRIM, hipCUB, radix sort)"),
    _rule("elementwise", r"elementwise|pointwise|vectorized_|unrolled_|activation|silu|gelu|relu|act_and_mul|"
          r"rotary|softmax|^(void )?(add|addition|sub|subtract|mul|multiply|div|divide|scale|axpy)(_kernel|<|\()",
          "elementwise, activations, rotary embeddings, softmax"),
]


def categorize(name: str, mangled: str = "") -> str:
    """The category of a kernel: the first rule matching its display name (or, failing that, its mangled name).

    Parameter lists and return types are dropped first: `foo(c10::Float8_e4m3fnuz*)` is not a quantization kernel.
    """
    for candidate in (short_name(name, width=1 << 20) if name else "", mangled):
        if not candidate:
            continue
        for rule in RULES:
            if rule.pattern.search(candidate):
                return rule.category
    return OTHER


CATEGORIES: tuple[str, ...] = tuple(dict.fromkeys(r.category for r in RULES)) + (OTHER,)
