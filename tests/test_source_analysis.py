"""Source analysis through libclang on the edge-case files in tests/data/source and the corpus."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from conftest import DATA, KERNELS
from rocm_perf.errors import RocmPerfError
from rocm_perf.source import analyze_bytes, analyze_source, match_kernel
from rocm_perf.clang_resources import find_resource_dir
from rocm_perf.source.parse import build_flags, parse_setup

SRC = DATA / "source"
CORPUS = sorted(KERNELS.glob("*.cu"))


@functools.cache
def _analysis(path: Path, flags: tuple[str, ...] = ()):
    return analyze_source(path, list(flags))


def analyzed(path: Path, flags=()):
    """Analyses are plain data: parse each file (with each flag set) once per test session."""
    return _analysis(path, tuple(flags))


def loops_by_var(analysis, function=None):
    return {l.induction_var: l for l in analysis.loops if function is None or l.function == function}


def test_resource_dir_is_found_at_run_time():
    path = find_resource_dir()
    assert (path / "include" / "stddef.h").is_file()
    assert parse_setup().mode in ("real", "stub")


def test_build_flags_keep_only_what_changes_the_parse():
    flags = build_flags("-O3 --offload-arch=gfx942 -DTILE=32 -I include -std=c++20 -o out -U NDEBUG -Wall")
    assert flags == ["-DTILE=32", "-I", "include", "-std=c++20", "-U", "NDEBUG"]


def test_templates_and_namespaces():
    a = analyzed(SRC / "templates.cu")
    by_name = {k.name: k for k in a.kernels}
    scale = by_name["scale_tiles"]
    assert scale.is_template and scale.mangled == "" and scale.template_params == ["T", "TILE"]
    assert scale.mangled_prefix == "_Z11scale_tilesI"
    assert "_Z11scale_tilesIfLi16EEvPT_S0_i" in scale.instantiations
    assert scale.signature.startswith("template < typename T , int TILE > __global__ void scale_tiles ( T * __restrict__ data")
    add = by_name["add_rows"]
    assert add.qualified_name == "ops::add_rows" and add.mangled == "_ZN3ops8add_rowsEPKfPfi"
    loop = a.kernel_loops("scale_tiles")[0]
    assert loop.id == "scale_tiles:scale_tiles:1:7"
    assert loop.trip_count is None and "bound" in loop.trip_count_note  # TILE is a template parameter
    assert loop.canonical


def test_match_kernel_by_every_kind_of_name():
    a = analyzed(SRC / "templates.cu")
    cases = {
        "_ZN3ops8add_rowsEPKfPfi": "add_rows",
        "_ZN3ops8add_rowsEPKfPfi.kd": "add_rows",
        "ops::add_rows(float const*, float*, int)": "add_rows",
        "ops::add_rows": "add_rows",
        "_Z11scale_tilesIfLi16EEvPT_S0_i": "scale_tiles",
        "_Z11scale_tilesIiLi4EEvPT_S0_i": "scale_tiles",  # an instantiation this file never names
        "void scale_tiles<float, 16>(float*, float, int)": "scale_tiles",
        "scale_tiles<double, 8>": "scale_tiles",
        "scale_tiles": "scale_tiles",
    }
    for name, expected in cases.items():
        kernel = match_kernel(name, a)
        assert kernel is not None and kernel.name == expected, name
    for name in ("_Z7unknownv", "unknown(int)", "add_rows_v2", "", "_ZN4other8add_rowsEPKfPfi"):
        assert match_kernel(name, a) is None, name


def test_mangled_names_are_the_device_side_ones():
    a = analyzed(KERNELS / "matmul_tiled.cu")
    kernel = a.kernels[0]
    assert kernel.mangled == "_Z12matmul_tiledPKfS0_Pfiii"  # not _Z27__device_stub__...
    assert match_kernel("matmul_tiled(float const*, float const*, float*, int, int, int)", a) is kernel


def test_macros_skip_with_reason_and_flags_change_trip_counts():
    a = analyzed(SRC / "macros.cu")
    from_macro = [l for l in a.loops if l.from_macro]
    assert len(from_macro) == 1 and from_macro[0].skip_reason == "the loop comes from a macro expansion"
    assert loops_by_var(a)["i"].trip_count == 16
    assert loops_by_var(a)["j"].pragma == "UNROLL_FOUR" and loops_by_var(a)["j"].pragma_factor == 4
    b = analyzed(SRC / "macros.cu", ["-DTILE=32"])
    assert loops_by_var(b)["i"].trip_count == 32 and loops_by_var(b)["j"].trip_count == 16


def test_every_pragma_spelling():
    a = analyzed(SRC / "pragmas.cu")
    found = {l.induction_var or l.kind: (l.pragma, l.pragma_factor) for l in a.loops}
    assert found == {
        "a": ("#pragma unroll", None),
        "b": ("#pragma unroll 2", 2),
        "c": ("#pragma unroll(4)", 4),
        "d": ("#pragma clang loop unroll_count(2)", 2),
        "e": ("#pragma nounroll", 1),
        "f": ("#pragma clang loop unroll(disable)", 1),
        "g": ('_Pragma("unroll 8")', 8),
        "h": ("UNROLL_TWO", 2),
        "while": ("#pragma unroll 2", 2),
        "z": (None, None),
    }
    g = loops_by_var(a)["g"]
    assert g.at_line_start and g.start > g.region_start  # _Pragma shares the loop's line
    assert a.data[g.region_start : g.start] == b'_Pragma("unroll 8") '
    assert any("should not be in parentheses" in w for w in a.warnings)  # warnings are kept


def test_bodies_extents_and_trip_counts():
    a = analyzed(SRC / "bodies.cu")
    loops = a.loops
    kinds = [l.kind for l in loops]
    assert kinds == ["for", "for", "for", "for", "for", "while", "do", "for"]
    single = loops[0]
    assert a.data[single.start : single.end] == b"for (int i = 0; i < n; ++i) acc += out[i];"
    assert not single.body_is_compound and a.data[single.body_start : single.body_end] == b"acc += out[i];"
    outer, inner = loops[1], loops[2]
    assert inner.depth == 1 and inner.parent_id == outer.id and outer.end == inner.end
    assert a.data[outer.end - 1 : outer.end] == b";"
    midline = loops[3]
    assert not midline.at_line_start and midline.compare == ">=" and midline.step_op == "-="
    assert loops[4].trip_count == 8 and loops[4].var_signed is False  # u = 10u; u > 2u; --u
    do_loop = loops[6]
    assert a.data[do_loop.start : do_loop.end] == b"do { acc *= 0.5f; } while (acc > 1.0f);"
    assert loops[7].trip_count == 7 and loops[7].step_op == "<<="  # s = 1..64 doubling


def test_utf8_before_loops_byte_offsets():
    a = analyzed(SRC / "bodies.cu")
    assert "π".encode() in a.data[: a.loops[0].start]
    for loop in a.loops:
        assert a.data[loop.start : loop.start + 2] in (b"fo", b"wh", b"do")


def test_crlf_file_offsets(tmp_path):
    crlf = tmp_path / "bodies_crlf.cu"
    crlf.write_bytes((SRC / "bodies.cu").read_bytes().replace(b"\n", b"\r\n"))
    a = analyzed(crlf)
    lf = analyzed(SRC / "bodies.cu")
    assert [l.id for l in a.loops] == [l.id for l in lf.loops]
    single = a.loops[0]
    assert a.data[single.start : single.end] == b"for (int i = 0; i < n; ++i) acc += out[i];"
    assert [l.trip_count for l in a.loops] == [l.trip_count for l in lf.loops]


def test_helpers_transitively_and_barriers_through_calls():
    a = analyzed(SRC / "helpers.cu")
    kernel = a.kernels[0]
    assert kernel.helpers == ["window", "sync_helper", "dot4"]
    functions = [l.function for l in a.loops]
    assert functions == ["helpers_kernel", "helpers_kernel", "window", "dot4"]
    assert "unused_helper" not in functions
    tile, strided, window, dot = a.loops
    assert tile.flags.has_barrier and tile.uniform_trip_count
    assert strided.flags.has_barrier and not strided.uniform_trip_count  # starts at threadIdx.x
    assert window.trip_count == 5 and dot.trip_count == 4
    assert window.id == "helpers_kernel:window:1:12"


def test_control_flow_flags():
    a = analyzed(SRC / "control.cu")
    loops = a.loops
    flags = [l.flags for l in loops]
    assert flags[0].has_break and not flags[0].has_continue
    assert flags[1].has_continue and not flags[1].has_break
    # a break inside a switch and break/continue of a nested loop do not leave the outer loop
    assert not flags[2].has_break and not flags[2].has_continue
    assert flags[3].has_break and flags[3].has_continue and loops[3].depth == 1
    assert flags[4].has_goto
    assert flags[5].has_return
    assert flags[6].writes_induction_var
    assert loops[7].step_op == "+=" and loops[7].step == "2" and loops[7].canonical  # i = i + 2
    assert not loops[8].canonical and "several" in loops[8].canonical_note
    assert flags[9].declares_shared
    assert loops[10].kind == "range-for" and loops[10].induction_var == "v"
    assert loops[11].compare == ">" and loops[11].step_op == "-=" and loops[11].canonical
    assert a.jumps == 2  # one goto, one label


def test_barrier_uniformity():
    a = analyzed(SRC / "barriers.cu")
    tiles, strided = a.loops
    assert tiles.flags.has_barrier and tiles.uniform_trip_count  # const local from a kernel argument
    assert strided.flags.has_barrier and not strided.uniform_trip_count


def test_errors_fail_the_analysis_with_the_compiler_message():
    with pytest.raises(RocmPerfError, match=r"broken.cu:5:\d+: use of undeclared identifier 'undeclared_name'"):
        analyze_source(SRC / "broken.cu")
    with pytest.raises(RocmPerfError, match="cannot read"):
        analyze_source(SRC / "missing.cu")


def test_analysis_does_not_touch_the_file():
    path = SRC / "bodies.cu"
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    analyze_source(path)
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before


def test_in_memory_contents_stand_in_for_the_file():
    data = (SRC / "macros.cu").read_bytes().replace(b"#define TILE 16", b"#define TILE 12")
    a = analyze_bytes(SRC / "macros.cu", data)
    assert loops_by_var(a)["i"].trip_count == 12


def test_loop_lookup_by_id_and_without_line():
    a = analyzed(SRC / "helpers.cu")
    assert a.loop("helpers_kernel:dot4:1:6").trip_count == 4
    assert a.loop("helpers_kernel:dot4:1").trip_count == 4
    with pytest.raises(RocmPerfError, match="no loop"):
        a.loop("helpers_kernel:dot4:2:6")


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_corpus_kernels_and_loops(path):
    a = analyzed(path)
    assert a.kernels, "every corpus program has a kernel"
    for kernel in a.kernels:
        assert kernel.mangled.startswith("_Z") or kernel.is_template
        assert match_kernel(kernel.mangled or kernel.mangled_prefix + "fEvv", a) is kernel
        assert " :: void (" in kernel.signature
    ids = [l.id for l in a.loops]
    assert len(ids) == len(set(ids)), "loop ids are unique"
    for loop in a.loops:
        assert a.data[loop.start : loop.start + 2] in (b"fo", b"wh", b"do") or loop.from_macro
        assert loop.start >= loop.region_start and loop.end > loop.start
    json.dumps(a.to_json())  # plain data


def test_corpus_documented_facts():
    """What kernels/README.md says about the corpus, as the analysis sees it."""
    stencil = analyzed(KERNELS / "stencil1d.cu").loops[0]
    assert stencil.trip_count == 9 and stencil.pragma is None  # -RADIUS..RADIUS
    tiled = analyzed(KERNELS / "matmul_tiled.cu")
    assert [l.trip_count for l in tiled.loops] == [None, 16]
    assert tiled.loops[0].flags.has_barrier and tiled.loops[0].uniform_trip_count
    assert [l.trip_count for l in analyzed(KERNELS / "matmul_tiled.cu", ["-DTILE=32"]).loops] == [None, 32]
    reduce = analyzed(KERNELS / "pipeline.cu").kernel_loops("reduce_chunk")[-1]
    assert reduce.trip_count == 6 and reduce.pragma == "#pragma unroll"  # off = 32; off > 0; off >>= 1


def test_stub_headers_give_the_same_analysis(monkeypatch):
    from rocm_perf.source import parse

    paths = [SRC / "helpers.cu", KERNELS / "softmax.cu"]
    real = [analyzed(p).to_json() for p in paths]
    monkeypatch.setenv("ROCM_PERF_SOURCE_MODE", "stub")
    parse.parse_setup.cache_clear()
    try:
        stub = [analyze_source(p).to_json() for p in paths]
    finally:
        monkeypatch.delenv("ROCM_PERF_SOURCE_MODE")
        parse.parse_setup.cache_clear()
    assert all(s["mode"] == "stub" for s in stub)
    for r, s in zip(real, stub, strict=True):
        r.pop("mode"), s.pop("mode"), r.pop("warnings"), s.pop("warnings")
        assert r == s


def test_a_source_whose_header_is_missing_reads_the_same_every_time(tmp_path):
    """A unit that does not compile is parsed afresh each time: a re-parse over its precompiled
    preamble would drop the preamble's own error (the missing header) and name its consequences."""
    source = tmp_path / "missing_header.cu"
    source.write_text('#include <hip/hip_runtime.h>\n#include "not_here.h"\n'
                      "__global__ void k(int* out) { out[0] = helper_from_the_header(); }\n")
    messages = []
    for _ in range(3):
        with pytest.raises(RocmPerfError) as e:
            analyze_source(source)
        messages.append(str(e.value))
    assert "'not_here.h' file not found" in messages[0]
    assert messages == [messages[0]] * 3
