"""`rocm-perf hotspots` on real and constructed instruction-level evidence.

- The real PC-sampling fixture (tests/data/pc-sampling, rocprof-compute-viewer's test data):
  per-line and per-reason totals against sums computed here straight from its JSON, and loop ids
  against `rocm-perf loops` on the same source.
- A constructed thread-trace set (tests/data/att, built from the documented columns: no real ATT
  output was available) and the same numbers as a stats_*.csv alone.
- rocprofv3's per-sample PC-sampling CSV from its documentation.
- Bad inputs, each one line through the CLI.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from rocm_perf.analysis.hotspots import analyze_hotspots, innermost_loop, LoopSpan
from rocm_perf.analysis.instruction_mix import instruction_class
from rocm_perf.cli import main
from rocm_perf.trace.instruction_load import load_instruction_profile

DATA = Path(__file__).resolve().parent / "data"
PCS = DATA / "pc-sampling"
SHIMS = f"--cflags=-I {PCS / 'include'}"
KERNEL_CPP = "/dockerx/work/rocm-systems/projects/rocprofiler-sdk/build/kernel.cpp"


def run_json(capsys, *argv) -> dict:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def independent_line_sums() -> tuple[dict[int, int], list[int]]:
    """Samples per kernel.cpp line and per stall reason, summed here from the raw JSON."""
    raw = json.loads((PCS / "code.json").read_text())
    col = {name: i for i, name in enumerate(raw["header"])}
    per_line: dict[int, int] = defaultdict(int)
    reasons = [0] * 10
    for row in raw["code"]:
        source = row[col["Source"]]
        if source.startswith(KERNEL_CPP + ":"):
            per_line[int(source.rsplit(":", 1)[1])] += row[col["PC_Issued"]] + row[col["PC_Stalled"]]
        for k, n in enumerate(row[col["Stall_Reasons"]]):
            reasons[k] += n
    return {line: n for line, n in per_line.items() if n}, reasons


@pytest.fixture(scope="module")
def fixture_report(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("hot")
    assert main(["hotspots", str(PCS), SHIMS, "--out", str(out), "--top", "5"]) == 0
    return json.loads((out / "hotspots.json").read_text())


def test_fixture_line_totals_equal_independent_sums(fixture_report):
    expected, _ = independent_line_sums()
    kernel = fixture_report["kernels"][0]
    got = {l["line"]: l["samples"] for l in kernel["lines"] if l["file"].endswith("source_2_kernel.cpp")}
    assert got == expected
    # A few written out by hand from the file, and the whole: 1306 issued + 3384 stalled.
    assert (got[552], got[561], got[644], got[566]) == (846, 568, 485, 478)
    assert kernel["samples"] == 4690 and kernel["issued"] == 1306 and kernel["stalled"] == 3384
    assert kernel["lines"][0]["share"] == pytest.approx(846 / 4690)


def test_fixture_stall_reasons_by_name(fixture_report):
    _, reasons = independent_line_sums()
    kernel = fixture_report["kernels"][0]
    names = fixture_report["stall_reasons"]
    assert names[:6] == ["none", "instruction_fetch", "alu_dependency", "waitcnt", "internal", "barrier"]
    assert {n: kernel["stalls"].get(n, 0) for n in names} == dict(zip(names, reasons))
    assert reasons == [0, 190, 138, 657, 252, 761, 609, 777, 0, 0]
    line_569 = next(l for l in kernel["lines"] if l["line"] == 569)  # __builtin_amdgcn_s_barrier()
    assert line_569["samples"] == 279 and line_569["issued"] == 3
    assert line_569["stalls"] == {"barrier": 276} and line_569["top_stall"] == "barrier"


def test_fixture_system_headers_grouped_and_mapped_to_the_saved_copy(fixture_report):
    kernel = fixture_report["kernels"][0]
    assert sum(kernel["system_headers"].values()) == 390
    assert all("/include/hip/" in p for p in kernel["system_headers"])
    assert kernel["unmapped_lines"] == [] and kernel["no_line"] == 0
    (mapped,) = fixture_report["sources"]["mapped"]
    assert mapped["recorded"] == KERNEL_CPP and mapped["how"] == "profiler's copy"
    assert mapped["file"].endswith("pc-sampling/source_2_kernel.cpp")


def _line_of_offset(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def test_fixture_loop_ids_are_those_of_rocm_perf_loops(fixture_report, capsys):
    loops = run_json(capsys, "loops", str(PCS / "source_2_kernel.cpp"), SHIMS, "--json", "--kernel", "reference_gemm")
    ids = {l["id"] for l in loops["loops"]}
    kernel = fixture_report["kernels"][0]
    assert {l["id"] for l in kernel["loops"]} == ids
    # Innermost wins, computed here from the loops' byte ranges: line 552 lies in four nested loops.
    data = (PCS / "source_2_kernel.cpp").read_bytes()
    holding = [l for l in loops["loops"] if _line_of_offset(data, l["start"]) <= 552 <= _line_of_offset(data, l["end"] - 1)]
    assert len(holding) == 4
    innermost = max(holding, key=lambda l: l["depth"])["id"]
    assert innermost == "reference_gemm:reference_gemm:5:551"
    assert next(l for l in kernel["lines"] if l["line"] == 552)["loop"] == innermost
    hottest = kernel["loops"][0]
    assert hottest["id"] == innermost and hottest["samples"] == 846 and hottest["top_stall"] == "pipe_stall"


def test_fixture_findings_name_their_evidence(fixture_report):
    findings = {(f["rule"], f["where"]) for f in fixture_report["kernels"][0]["findings"]}
    # The loop around line 569's __builtin_amdgcn_s_barrier() waits at the barrier.
    assert ("barrier-bound", "reference_gemm:reference_gemm:2:540") in findings
    # Line 561 (LDS stores waiting on loads) stalls on waitcnt.
    assert ("memory-latency-bound", "reference_gemm:reference_gemm:7:560") in findings
    barrier = next(f for f in fixture_report["kernels"][0]["findings"] if f["rule"] == "barrier-bound")
    assert "stalled samples" in barrier["evidence"] and barrier["unrolling"] == "neutral"


def test_terminal_tables_show_loops_lines_and_source(capsys):
    assert main(["hotspots", str(PCS), SHIMS, "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "hot loops" in out and "reference_gemm:reference_gemm:5:551" in out
    assert "source_2_kernel.cpp:552" in out and "temp_a[n][j1]" in out  # the source text beside the line
    assert "bar: = issued" in out and "system headers: 390 samples" in out


def test_kernel_filter(capsys):
    assert main(["hotspots", str(PCS), SHIMS, "--kernel", "nothing_like_this"]) == 2
    err = capsys.readouterr().err
    assert "no kernel matches --kernel 'nothing_like_this'" in err and len(err.strip().splitlines()) == 1


def test_instruction_classes():
    cases = {"v_mfma_f32_16x16x32_fp8_fp8 a[0:3], v[0:1], v[2:3], 0": "mfma", "s_waitcnt vmcnt(0)": "waitcnt",
             "s_barrier": "barrier", "ds_read_b128 v[0:3], v4": "lds", "global_load_dword v1, v[2:3], off": "vmem",
             "buffer_load_dword v1, off, s[0:3], 0": "vmem", "s_load_dwordx4 s[0:3], s[4:5], 0x0": "smem",
             "s_cbranch_scc1 65531": "branch", "s_add_i32 s8, s8, 1": "salu", "v_fma_f32 v3, v3, 1.5, 1.0": "valu",
             "s_nop 4": "other", "; comment": None}
    assert {isa: instruction_class(isa) for isa in cases} == cases


def test_innermost_loop_by_line_range():
    spans = [LoopSpan("k:k:1:1", "f", 1, 10, 0), LoopSpan("k:k:2:2", "f", 2, 5, 1), LoopSpan("k:k:3:7", "f", 7, 7, 1)]
    assert innermost_loop(spans, "f", 3).id == "k:k:2:2"
    assert innermost_loop(spans, "f", 7).id == "k:k:3:7"
    assert innermost_loop(spans, "f", 9).id == "k:k:1:1"
    assert innermost_loop(spans, "f", 11) is None and innermost_loop(spans, "g", 3) is None


# ---- thread trace (constructed from the documented columns) ----------------------------------


def test_att_folder_cycles_per_line_and_loop(capsys):
    report = run_json(capsys, "hotspots", str(DATA / "att"), "--source", str(DATA / "att"), "--json")
    assert report["evidence"] == "att" and report["unit"] == "cycles"
    kernel = report["kernels"][0]
    assert kernel["kernel"] == "att_kernel(float const*, float*, int)"
    lines = {l["line"]: l["samples"] for l in kernel["lines"]}
    assert lines == {7: 25600 + 96000 + 25600, 6: 25600 + 25600 + 12800, 10: 2048, 4: 640 + 256, 12: 512}
    loops = {l["id"]: l for l in kernel["loops"]}
    assert loops["att_kernel:att_kernel:1:6"]["samples"] == 211200
    assert loops["att_kernel:att_kernel:1:6"]["stalled"] == 6400 + 90000
    assert loops["att_kernel:att_kernel:2:9"]["samples"] == 2048
    assert kernel["no_line"] == 128
    rules = {(f["rule"], f["where"]) for f in kernel["findings"]}
    assert ("memory-latency-bound", "att_kernel:att_kernel:1:6") in rules  # s_waitcnt holds 45 % of its cycles
    assert "no header" in " ".join(report["notes"])


def test_att_stats_csv_alone_gives_the_same_lines(capsys):
    report = run_json(capsys, "hotspots", str(DATA / "att-stats"), "--source", str(DATA / "att-stats"), "--json")
    kernel = report["kernels"][0]
    assert kernel["kernel"] == "dispatch 1"
    assert {l["line"]: l["samples"] for l in kernel["lines"]} == {7: 147200, 6: 64000, 10: 2048, 4: 896, 12: 512}
    assert kernel["loops"][0]["id"] == "att_kernel:att_kernel:1:6"  # matched by where its lines lie
    assert any("does not name it" in w for w in report["warnings"])


# ---- rocprofv3's per-sample CSV (real, from its documentation) --------------------------------


def test_rocprofv3_pc_sampling_csv_counts_samples_per_instruction():
    path = DATA / "rocprofv3-csv" / "pc_sampling_host_trap.csv"
    profile = load_instruction_profile(path)
    assert profile.evidence == "pc-sampling" and not profile.has_issue_split
    counts = Counter(line.split('"')[1] for line in path.read_text().splitlines()[1:])
    got = {str(isa): w for isa, w in zip(profile.isa, profile.weight)}
    assert got == counts and got["s_endpgm"] == 36 and got["s_waitcnt vmcnt(0)"] == 30
    result = analyze_hotspots(profile)
    assert result.kernels[0].no_line == 79  # built without -g: no source lines


# ---- version and width tolerance -------------------------------------------------------------


def _copy_fixture(tmp_path: Path) -> Path:
    folder = tmp_path / "pcs"
    shutil.copytree(PCS, folder)
    return folder


def test_unknown_version_and_longer_stall_reason_list_still_work(tmp_path):
    folder = _copy_fixture(tmp_path)
    data = json.loads((folder / "code.json").read_text())
    data["version"] = "4.1.0"
    col = data["header"].index("Stall_Reasons")
    for row in data["code"]:
        row[col] = row[col] + [0, 0]
    data["code"][5][col][11] = 7
    data["header"].append("Future_Column")  # a column we do not know, at the end
    for row in data["code"]:
        row.append(1)
    (folder / "code.json").write_text(json.dumps(data))
    profile = load_instruction_profile(folder)
    assert profile.stall_reasons[-2:] == ("reason_10", "reason_11")
    assert profile.stalls[:, 11].sum() == 7 and profile.weight.sum() == 4690
    assert any("4.1.0" in n for n in profile.notes) and any("12 reasons" in n for n in profile.notes)


def test_columns_are_found_by_name(tmp_path):
    folder = _copy_fixture(tmp_path)
    data = json.loads((folder / "code.json").read_text())
    order = list(reversed(range(len(data["header"]))))
    data["header"] = [data["header"][i] for i in order]
    data["code"] = [[row[i] for i in order] for row in data["code"]]
    (folder / "code.json").write_text(json.dumps(data))
    profile = load_instruction_profile(folder)
    assert profile.weight.sum() == 4690 and profile.stalled.sum() == 3384


# ---- bad inputs: one line each, naming the file ----------------------------------------------


def _one_line_error(capsys, argv: list[str], *expected: str) -> str:
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert "Traceback" not in captured.err
    for text in expected:
        assert text in lines[0], lines[0]
    return lines[0]


def test_bad_empty_code_list(tmp_path, capsys):
    folder = _copy_fixture(tmp_path)
    data = json.loads((folder / "code.json").read_text())
    data["code"] = []
    (folder / "code.json").write_text(json.dumps(data))
    _one_line_error(capsys, ["hotspots", str(folder)], str(folder / "code.json"), "`code` list is empty")


def test_bad_header_without_source(tmp_path, capsys):
    folder = _copy_fixture(tmp_path)
    data = json.loads((folder / "code.json").read_text())
    data["header"][data["header"].index("Source")] = "Where"
    (folder / "code.json").write_text(json.dumps(data))
    _one_line_error(capsys, ["hotspots", str(folder)], "code.json", "no `Source` column")


def test_bad_non_numeric_count(tmp_path, capsys):
    folder = _copy_fixture(tmp_path)
    data = json.loads((folder / "code.json").read_text())
    data["code"][7][data["header"].index("PC_Stalled")] = "lots"
    (folder / "code.json").write_text(json.dumps(data))
    _one_line_error(capsys, ["hotspots", str(folder)], "code.json: code row 7: `PC_Stalled` is 'lots', not a number")


def test_bad_missing_filenames_json(tmp_path, capsys):
    folder = _copy_fixture(tmp_path)
    (folder / "filenames.json").unlink()
    _one_line_error(capsys, ["hotspots", str(folder / "code.json")], str(folder / "filenames.json"), "missing")


def test_bad_source_that_does_not_match(tmp_path, capsys):
    mine = tmp_path / "src"
    mine.mkdir()
    edited = (PCS / "source_2_kernel.cpp").read_text().splitlines()
    edited.insert(540, "    // a line the profiled build did not have")
    (mine / "kernel.cpp").write_text("\n".join(edited) + "\n")
    _one_line_error(capsys, ["hotspots", str(PCS), "--source", str(mine)], str(mine / "kernel.cpp"),
                    "does not match the source the profile was taken with", "line 541")


def test_bad_source_too_short_without_a_saved_copy(tmp_path, capsys):
    folder = _copy_fixture(tmp_path)
    (folder / "snapshots.json").write_text("{}")
    mine = tmp_path / "src"
    mine.mkdir()
    (mine / "kernel.cpp").write_text("int main() { return 0; }\n")
    _one_line_error(capsys, ["hotspots", str(folder), "--source", str(mine)], "kernel.cpp: does not match the profile",
                    "1 lines", "line 652")


def test_bad_not_a_profile(tmp_path, capsys):
    other = tmp_path / "notes.json"
    other.write_text('{"hello": 1}')
    _one_line_error(capsys, ["hotspots", str(other)], str(other), "not a decoded PC-sampling")
    _one_line_error(capsys, ["hotspots", str(tmp_path / "missing")], "no such file or directory")


def test_unmapped_lines_are_listed(tmp_path, capsys):
    folder = _copy_fixture(tmp_path)
    (folder / "snapshots.json").write_text("{}")
    report = run_json(capsys, "hotspots", str(folder), "--json")
    kernel = report["kernels"][0]
    assert report["sources"]["unmapped"] == [KERNEL_CPP]
    assert kernel["lines"] == [] and kernel["loops"] is None
    assert sum(l["samples"] for l in kernel["unmapped_lines"]) == sum(independent_line_sums()[0].values())


def test_annotated_source_for_the_html_report(fixture_report):
    from rocm_perf.optimize.run_view import RunView
    from rocm_perf.report.html import render_html
    from rocm_perf.source.profile_sources import annotated_source

    hot = annotated_source(fixture_report)
    assert hot["kernel"].startswith("void reference_gemm<4>")
    rows = {r["line"]: r for b in hot["blocks"] for r in b["rows"] if "line" in r}
    assert rows[552]["share"] == pytest.approx(846 / 4690) and "temp_a[n][j1]" in rows[552]["text"]
    assert rows[550]["share"] == 0.0  # context around a hot line
    assert hot["loops"][0]["id"] == "reference_gemm:reference_gemm:5:551"
    page = render_html(RunView(name="r", path=Path("/tmp"), hot_source=hot))
    assert "Where the time goes" in page and "reference_gemm:reference_gemm:5:551" in page
    assert "temp_a[n][j1] = (X + n*SHMBLOCK &lt; MDIM)" in page  # source text is escaped, never markup
