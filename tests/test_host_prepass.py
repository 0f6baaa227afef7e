"""The <<<>>> and extern __shared__ pre-pass: rewrites what it should, leaves literals and
comments alone, keeps line numbers, and refuses forms it cannot rewrite faithfully."""

from __future__ import annotations

import pytest

from rocm_perf.backends.launch_prepass import blank_literals, prepass, rewrite_dynamic_shared, rewrite_launches
from rocm_perf.errors import RocmPerfError


def test_basic_launch_gets_default_shmem_and_stream():
    text, n = rewrite_launches("k<<<grid, block>>>(a, b);")
    assert n == 1
    assert text == "hipLaunchKernelGGL(k, grid, block, 0, 0, a, b);"


def test_all_four_parameters_and_nested_calls_and_commas():
    text, _ = rewrite_launches("k<<<dim3(f(1, 2), 3), 64, bytes(n, m), s>>>(a, g(b, c), h[1]);")
    assert text == "hipLaunchKernelGGL(k, dim3(f(1, 2), 3), 64, bytes(n, m), s, a, g(b, c), h[1]);"


def test_launch_without_arguments():
    text, _ = rewrite_launches("k<<<1, 1>>>();")
    assert text == "hipLaunchKernelGGL(k, 1, 1, 0, 0);"


def test_template_kernel_is_wrapped_so_its_commas_survive_the_macro():
    text, _ = rewrite_launches("ns::kern<float, 4> <<<g, b>>>(x);")
    assert text == "hipLaunchKernelGGL(HIP_KERNEL_NAME(ns::kern<float, 4>), g, b, 0, 0, x);"


def test_nested_template_arguments():
    text, _ = rewrite_launches("k<Vec<float, 2>, 8><<<g, b>>>(x);")
    assert text.startswith("hipLaunchKernelGGL(HIP_KERNEL_NAME(k<Vec<float, 2>, 8>), g, b")


def test_shift_inside_launch_parameters():
    text, _ = rewrite_launches("k<<<n >> 1, (m >> 2)>>>(0);")
    assert text == "hipLaunchKernelGGL(k, n >> 1, (m >> 2), 0, 0, 0);"


def test_launch_after_a_for_header_and_an_if():
    text, n = rewrite_launches("for (int i = 0; i < 3; ++i) k<<<1, 1>>>(i);\nif (x) k<<<2, 2>>>(x);")
    assert n == 2
    assert "for (int i = 0; i < 3; ++i) hipLaunchKernelGGL(k, 1, 1, 0, 0, i);" in text
    assert "if (x) hipLaunchKernelGGL(k, 2, 2, 0, 0, x);" in text


def test_strings_and_comments_are_left_alone():
    src = (
        'printf("error in k<<<1,1>>>(x)\\n"); // k<<<2,2>>>(y)\n'
        "/* k<<<3,3>>>(z) */ k<<<4, 4>>>(w);\n"
        "const char* r = R\"x(k<<<5,5>>>(v))x\";\n"
        "char c = '<'; int big = 1'000'000;\n"
    )
    text, n = rewrite_launches(src)
    assert n == 1
    assert 'printf("error in k<<<1,1>>>(x)\\n"); // k<<<2,2>>>(y)' in text
    assert "/* k<<<3,3>>>(z) */ hipLaunchKernelGGL(k, 4, 4, 0, 0, w);" in text
    assert 'R"x(k<<<5,5>>>(v))x"' in text


def test_a_launch_inside_a_string_does_not_swallow_the_next_launch():
    text, n = rewrite_launches('fail("bad <<<x>>> config"); k<<<1, 1>>>(a);')
    assert n == 1
    assert text.endswith("hipLaunchKernelGGL(k, 1, 1, 0, 0, a);")


def test_line_numbers_are_kept_for_multiline_launches():
    src = "a;\nk<<<g,\n  b>>>(\n  x,\n  y);\nafter_line_6;\n"
    text, _ = rewrite_launches(src)
    assert text.count("\n") == src.count("\n")
    assert text.splitlines()[5] == "after_line_6;"


def test_blank_literals_keeps_offsets_and_newlines():
    src = 'a = "x\\"y"; /* c\nd */ b = \'q\';'
    masked = blank_literals(src)
    assert len(masked) == len(src)
    assert masked.count("\n") == src.count("\n")
    assert "x" not in masked and "q" not in masked and "c" not in masked.split("\n")[0][12:]


@pytest.mark.parametrize(
    "bad, words",
    [
        ("(c ? k1 : k2)<<<1, 1>>>(x);", "unsupported kernel launch form"),
        ("table[i]<<<1, 1>>>(x);", "unsupported kernel launch form"),
        ("obj.k<<<1, 1>>>(x);", "unsupported kernel launch form"),
        ("k<(N > 2)><<<1, 1>>>(x);", "template arguments with parentheses"),
        ("k<<<1>>>(x);", "2 to 4 launch parameters"),
        ("k<<<1, 2, 3, 4, 5>>>(x);", "2 to 4 launch parameters"),
        ("k<<<1, 1>>>;", "followed by its (arguments)"),
        ("k<<<1, 1;", "without its closing >>>"),
    ],
)
def test_unsupported_forms_fail_with_file_and_line(bad, words):
    with pytest.raises(RocmPerfError) as e:
        prepass("int x;\n\n" + bad, "prog.cu")
    assert str(e.value).startswith("prog.cu:3: ")
    assert words in str(e.value)


def test_extern_shared_inside_a_kernel_becomes_a_pointer():
    text, n = rewrite_dynamic_shared("__global__ void k() {\n  extern __shared__ float s[];\n  s[0] = 1;\n}")
    assert n == 1
    assert "float* const s = reinterpret_cast<float*>(::rocm_perf_host::dynamic_shared());" in text


def test_extern_shared_at_file_and_namespace_scope_becomes_an_accessor_object():
    src = 'extern __shared__ double a[];\nnamespace n { extern __shared__ __align__(16) unsigned char b[]; }\nextern "C" { extern __shared__ int c[]; }'
    text, n = rewrite_dynamic_shared(src)
    assert n == 3
    assert "static constexpr ::rocm_perf_host::DynamicShared<double> a{};" in text
    assert "::rocm_perf_host::DynamicShared<unsigned char> b{};" in text
    assert "::rocm_perf_host::DynamicShared<int> c{};" in text


def test_extern_shared_in_a_nested_block_of_a_kernel_is_block_scope():
    text, _ = rewrite_dynamic_shared("namespace x {\nvoid f() { if (y) { extern __shared__ int s[]; } }\n}")
    assert "int* const s = reinterpret_cast<int*>" in text


def test_plain_extern_declarations_are_untouched():
    src = "extern int table[];\nextern __device__ float g;\n"
    assert rewrite_dynamic_shared(src) == (src, 0)


def test_template_kernel_with_deduced_arguments_is_launched_by_name():
    src = (
        "template <typename T> __global__ void scale(T* x, int n) {}\n"
        "template <int N> __global__ void __launch_bounds__(256) bounded(float* x) {}\n"
        "__global__ void plain(float* x) {}\n"
        "void f() { scale<<<1, 64>>>(x, 64); scale<float><<<1, 64>>>(x, 64); plain<<<1, 1>>>(x);\n"
        "  hipLaunchKernelGGL(scale, 1, 1, 0, 0, x, 3); hipLaunchKernelGGL(plain, 1, 1, 0, 0, x); }\n"
    )
    text = prepass(src).text
    assert "ROCM_PERF_LAUNCH_DEDUCED(scale, 1, 64, 0, 0, x, 64);" in text
    assert "hipLaunchKernelGGL(HIP_KERNEL_NAME(scale<float>), 1, 64, 0, 0, x, 64);" in text
    assert "hipLaunchKernelGGL(plain, 1, 1, 0, 0, x);" in text
    assert "ROCM_PERF_LAUNCH_DEDUCED(scale, 1, 1, 0, 0, x, 3);" in text


def test_unroll_pragmas_become_gcc_unroll_on_the_same_lines():
    from rocm_perf.backends.launch_prepass import rewrite_unroll_pragmas

    src = (
        "  #pragma unroll 4\n"
        "#pragma unroll(2)\n"
        "    #pragma clang loop unroll_count(8)\n"
        "#pragma nounroll\n"
        "#pragma unroll\n"
        'for (;;) _Pragma("unroll 1") for (;;) {}\n'
        "// #pragma unroll 4\n"
        'const char* s = "#pragma unroll 4";\n'
    )
    out, count = rewrite_unroll_pragmas(src)
    assert count == 5
    assert out.splitlines() == [
        "  #pragma GCC unroll 4",
        "#pragma GCC unroll 2",
        "    #pragma GCC unroll 8",
        "#pragma GCC unroll 1",
        "#pragma unroll",  # full unroll: g++'s own choice
        'for (;;) _Pragma("GCC unroll 1") for (;;) {}',
        "// #pragma unroll 4",
        'const char* s = "#pragma unroll 4";',
    ]
