"""The AMD compile check against Debian's real hipcc (clang 15), on small kernels in tests/data/compile."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from conftest import DATA, KERNELS
from rocm_perf.backends.check_command import run_check
from rocm_perf.backends.compile_check import (
    choose_target,
    compile_check,
    compile_check_many,
    hipcc_available,
    parse_resource_remarks,
)
from rocm_perf.backends.compiler_output import first_errors
from rocm_perf.backends.isa import count_instructions

COMPILE = DATA / "compile"
RESOURCE_FIELDS = ("sgpr", "vgpr", "agpr", "scratch_bytes", "occupancy", "sgpr_spill", "vgpr_spill", "lds_bytes")


def by_name(report):
    return {k.demangled: k for k in report.kernels}


def test_plain_layout_gives_every_kernel_with_every_field(hipcc):
    report = compile_check(COMPILE / "resources.cu")
    assert report.ok and report.available and report.errors == ""
    assert (report.arch, report.arch_match) == ("gfx90a", "exact")
    kernels = by_name(report)
    assert set(kernels) == {
        "saxpy_tiled(float*, float const*, float, int)",
        "indexed_local(float*, int)",
        "fill_ones",
        "void scale<float>(float*, float, int)",
        "void scale<double>(double*, double, int)",
    }
    assert kernels["fill_ones"].mangled == "fill_ones"  # extern "C": nothing to demangle
    assert kernels["void scale<float>(float*, float, int)"].mangled == "_Z5scaleIfEvPT_S0_i"
    for k in report.kernels:
        for name in RESOURCE_FIELDS:
            assert isinstance(getattr(k, name), int), (k.mangled, name)
        assert 1 <= k.occupancy <= 8
        assert k.isa_instructions is None  # not asked for
    assert kernels["saxpy_tiled(float*, float const*, float, int)"].lds_bytes == 1024
    assert kernels["indexed_local(float*, int)"].scratch_bytes > 0
    assert kernels["fill_ones"].scratch_bytes == 0 and kernels["fill_ones"].lds_bytes == 0
    assert report.kernel("saxpy_tiled") is kernels["saxpy_tiled(float*, float const*, float, int)"]


def test_compiles_leave_nothing_in_the_temporary_directory(hipcc, tmp_path, monkeypatch):
    # clang's HIP driver leaves two empty <stem>-XXXXXX directories in TMPDIR per device compile;
    # a sweep's compile checks used to leave thousands in /tmp.
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr("tempfile.tempdir", str(scratch))
    assert compile_check(COMPILE / "resources.cu").ok
    assert compile_check(COMPILE / "resources.cu", keep_isa=True, workdir=tmp_path / "kept").ok
    assert sorted(p.name for p in scratch.iterdir()) == []
    assert not [p for p in (tmp_path / "kept").iterdir() if p.is_dir()]


def test_save_temps_layout_gives_the_same_numbers_and_the_isa(hipcc, tmp_path):
    plain = compile_check(COMPILE / "resources.cu")
    with_isa = compile_check(COMPILE / "resources.cu", keep_isa=True, workdir=tmp_path)
    assert with_isa.ok
    log = (tmp_path / "compile.log").read_text()
    assert "-save-temps=obj" in log
    assert re.search(r"^remark: .*resources\.cu:\d+:\d+: Function Name: ", log, re.M), "expected the -save-temps layout"
    for a, b in zip(plain.kernels, with_isa.kernels):
        assert [getattr(a, f) for f in RESOURCE_FIELDS] == [getattr(b, f) for f in RESOURCE_FIELDS]
        assert a.mangled == b.mangled
    isa_text = (tmp_path / "resources.gfx90a.s").read_text()
    assert with_isa.isa_path == str(tmp_path / "resources.gfx90a.s")
    # The assembler's own code size bounds the count: gfx9 instructions are 4 or 8 bytes, plus
    # alignment padding before loop headers.
    code_bytes = [int(n) for n in re.findall(r"codeLenInByte = (\d+)", isa_text)]
    assert len(code_bytes) == len(with_isa.kernels)
    for k, size in zip(with_isa.kernels, code_bytes):
        assert k.isa_instructions and 4 * k.isa_instructions <= size <= 12 * k.isa_instructions, (k.mangled, size)


def test_parser_accepts_both_remark_layouts():
    plain = (
        "k.cu:7:1: remark: Function Name: _Z1kPf [-Rpass-analysis=kernel-resource-usage]\n"
        "__global__ void k(float* p) {\n^\n"
        "k.cu:7:1: remark:     SGPRs: 18 [-Rpass-analysis=kernel-resource-usage]\n"
        "k.cu:7:1: remark:     VGPRs Spill: 3 [-Rpass-analysis=kernel-resource-usage]\n"
        "k.cu:7:1: remark:     LDS Size [bytes/block]: 1024 [-Rpass-analysis=kernel-resource-usage]\n"
    )
    saved = (
        "remark: k.cu:7:0: Function Name: _Z1kPf [-Rpass-analysis=kernel-resource-usage]\n"
        "remark: k.cu:7:0:     SGPRs: 18 [-Rpass-analysis=kernel-resource-usage]\n"
        "remark: k.cu:7:0:     VGPRs Spill: 3 [-Rpass-analysis=kernel-resource-usage]\n"
        "remark: k.cu:7:0:     LDS Size [bytes/block]: 1024 [-Rpass-analysis=kernel-resource-usage]\n"
    )
    for text in (plain, saved):
        (k,) = parse_resource_remarks(text)
        assert (k.mangled, k.sgpr, k.vgpr_spill, k.lds_bytes, k.vgpr) == ("_Z1kPf", 18, 3, 1024, None)


def test_register_pressure_shows_spills_scratch_and_lower_occupancy(hipcc):
    report = compile_check(COMPILE / "spill.cu")
    assert report.ok
    (k,) = report.kernels
    assert k.vgpr_spill > 0
    assert k.scratch_bytes > 0
    assert k.occupancy <= 4  # 1024-thread blocks: at most 4 waves per SIMD
    assert k.vgpr <= 128


def test_agprs_read_on_gfx908(hipcc):
    report = compile_check(COMPILE / "mfma.cu", arch="gfx908")
    assert report.ok and (report.arch, report.arch_match) == ("gfx908", "exact")
    (k,) = report.kernels
    assert k.agpr > 0


def test_build_flags_pass_through_but_the_target_is_the_checks(hipcc, tmp_path):
    report = compile_check(COMPILE / "mfma.cu", arch="gfx908", flags=["--offload-arch=gfx90a", "-O1", "-DUNUSED=1"], workdir=tmp_path)
    assert report.ok and len(report.kernels) == 1 and report.kernels[0].agpr > 0  # gfx908 only
    assert "-O1" in report.command and "-O3" not in report.command and "-DUNUSED=1" in report.command
    assert "--offload-arch=gfx90a" not in report.command


def test_compile_error_returns_the_first_errors(hipcc):
    report = compile_check(COMPILE / "broken.cu")
    assert not report.ok and report.kernels == []
    assert "undeclared_value" in report.errors
    assert "cannot initialize a variable of type 'int'" in report.errors
    assert "warning" not in report.errors


def test_gfx942_maps_to_gfx90a_as_compatible(hipcc):
    arch, match, reason = choose_target("gfx942")
    assert (arch, match) == ("gfx90a", "compatible")
    assert "gfx942" in reason and "gfx90a" in reason
    report = compile_check(COMPILE / "resources.cu", arch="gfx950")
    assert report.ok and (report.arch, report.requested_arch, report.arch_match) == ("gfx90a", "gfx950", "compatible")
    assert choose_target("gfx90a")[1] == "exact"
    assert choose_target("gfx9999")[1] == "unknown"


def test_many_sources_in_a_pool_keep_their_order(hipcc, tmp_path):
    sources = [COMPILE / "broken.cu", COMPILE / "resources.cu", COMPILE / "mfma.cu"]
    reports = compile_check_many(sources, jobs=2, workdir=tmp_path)
    assert [r.source for r in reports] == [str(s) for s in sources]
    assert [r.ok for r in reports] == [False, True, True]
    assert len(list(tmp_path.glob("*/compile.log"))) == 3


def test_timeout_is_a_failed_report_not_a_hang(hipcc):
    report = compile_check(COMPILE / "spill.cu", timeout=0.01)
    assert not report.ok and report.timed_out
    assert "timed out" in report.errors


def test_missing_hipcc_is_reported_not_raised(monkeypatch, tmp_path):
    monkeypatch.setenv("HIPCC", str(tmp_path / "no-such-hipcc"))
    ok, why = hipcc_available()
    assert not ok and "apt-get install -y hipcc" in why
    report = compile_check(COMPILE / "resources.cu")
    assert not report.ok and not report.available


def test_first_errors_skips_warnings_and_keeps_context():
    output = (
        "clang: warning: -lm: 'linker' input unused [-Wunused-command-line-argument]\n"
        "a.cu:3:5: error: use of undeclared identifier 'x'\n"
        "  x = 1;\n"
        "  ^\n"
        "a.cu:9:1: warning: unused variable 'y'\n"
        "  int y;\n"
        "a.cu:12:2: error: expected ';'\n"
        "2 errors generated when compiling for gfx90a.\n"
    )
    assert first_errors(output).splitlines() == [
        "a.cu:3:5: error: use of undeclared identifier 'x'",
        "  x = 1;",
        "  ^",
        "a.cu:12:2: error: expected ';'",
    ]
    assert first_errors(output, max_errors=1).count("error:") == 1


def test_count_instructions_ignores_directives_comments_and_labels():
    asm = (
        "\t.text\n"
        "_Z1kPf:                  ; @_Z1kPf\n"
        "; %bb.0:\n"
        "\ts_load_dword s0, s[4:5], 0x4\n"
        "\tv_add_u32_e32 v0, s0, v0\n"
        ".LBB0_1:\n"
        "\ts_endpgm\n"
        "\t.section\t.rodata,#alloc\n"
        ".Lfunc_end0:\n"
        "\t.size\t_Z1kPf, .Lfunc_end0-_Z1kPf\n"
        "other:\n"
        "\ts_endpgm\n"
        ".Lfunc_end1:\n"
    )
    assert count_instructions(asm) == {"_Z1kPf": 3, "other": 1}


def test_check_command_prints_the_table(hipcc, capsys):
    assert run_check(COMPILE / "spill.cu", arch="gfx942") == 0
    out = capsys.readouterr().out
    assert "compatible" in out and "gfx90a" in out
    assert re.search(r"register_pressure\(float const\*, float\*, int\)\s+\d+\s+128\s+0\s+\d+\s+[1-4]\s+0\s+[1-9]\d*", out)
    assert "spills registers: register_pressure" in out


def test_check_command_json_and_compile_error(hipcc, capsys):
    assert run_check(COMPILE / "broken.cu", as_json=True) == 1
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert data["ok"] is False and "undeclared_value" in data["errors"]
    assert "undeclared_value" in captured.err


def test_check_command_isa_goes_to_the_working_directory(hipcc, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run_check(COMPILE / "mfma.cu", arch="gfx908", keep_isa=True) == 0
    assert (tmp_path / "mfma.gfx908.s").is_file()
    assert "ISA instrs" in capsys.readouterr().out
    assert not (COMPILE / "mfma.gfx908.s").exists()


CORPUS = sorted(KERNELS.glob("*.cu"))


@pytest.mark.parametrize("program", CORPUS, ids=[p.name for p in CORPUS])
def test_check_runs_on_every_corpus_program(hipcc, program, capsys):
    assert run_check(program) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "compiled for gfx90a" in out
    assert "(no kernels)" not in out


def test_cli_check_exit_codes(hipcc, tmp_path):
    def cli(*args):
        return subprocess.run([sys.executable, "-m", "rocm_perf.cli", *args], capture_output=True, text=True, timeout=300)

    broken = cli("check", str(COMPILE / "broken.cu"))
    assert broken.returncode == 1 and "undeclared_value" in broken.stderr
    missing = cli("check", str(tmp_path / "nope.cu"))
    assert missing.returncode == 2 and missing.stderr.strip() == f"rocm-perf: error: {tmp_path / 'nope.cu'}: no such file"
    good = cli("check", str(COMPILE / "resources.cu"), "--json", "--cflags=-DUNUSED=1")
    assert good.returncode == 0 and len(json.loads(good.stdout)["kernels"]) == 5
