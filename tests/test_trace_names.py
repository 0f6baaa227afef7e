"""Display names: demangling what traces leave mangled, shortening long C++ names for tables."""

import shutil

import pytest

from rocm_perf.trace import KernelSymbol, Trace
from rocm_perf.trace.names import demangle_symbols, short_name


def test_short_name_drops_return_type_and_parameters():
    assert short_name("produce_kernel(float*, float const*, int)") == "produce_kernel"
    assert short_name("void addition_kernel<float>(float*, float const*, float const*, int, int)") == "addition_kernel<float>"
    enable_if = ("std::enable_if<(((8)>(0)))&&_typeConvert<c10::Half>::exists, void>::type "
                 "vllm::fused_add_rms_norm_kernel<c10::Half, 8>(c10::Half*, c10::Half*, int)")
    assert short_name(enable_if) == "vllm::fused_add_rms_norm_kernel<c10::Half, 8>"
    assert short_name("void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, 1>(float*)") == \
        "at::native::(anonymous namespace)::CatArrayBatchedCopy<float, 1>"


def test_short_name_folds_deep_templates_then_cuts():
    name = ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<long>, "
            "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<long>, at::detail::Array<char*, 1>)")
    folded = "at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<…>, at::detail::Array<…> >"
    assert short_name(name, width=100) == folded
    assert short_name(name, width=60) == folded[:59] + "…"
    cijk = "Cijk_Ailk_Bljk_SB_MT128x64x16_MI32x32x2x1_SN_1LDSB1_APM1_ABV0_ACED0_AF0EM1_AF1EM1_AMAS3"
    assert short_name(cijk, width=40) == cijk[:39] + "…"


@pytest.mark.skipif(shutil.which("c++filt") is None, reason="c++filt (binutils) not installed")
def test_mangled_display_names_are_demangled():
    t = Trace.from_rows(start=[0, 1], end=[1, 2], kernel=[0, 1],
                        symbols=[KernelSymbol("_Z14produce_kernelPfPKfi.kd", "_Z14produce_kernelPfPKfi.kd"),
                                 KernelSymbol("plain", "plain_kernel(int)")])
    demangle_symbols(t)
    assert t.symbols[0].display_name == "produce_kernel(float*, float const*, int)"
    assert t.symbols[0].name == "_Z14produce_kernelPfPKfi.kd"  # the symbol keeps its mangled name
    assert t.symbols[1].display_name == "plain_kernel(int)"
