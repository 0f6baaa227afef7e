"""`rocm-perf summary` end to end through the CLI entry point, on every fixture format."""

import csv
import json
import sqlite3

import pytest

from conftest import DATA
from rocm_perf.cli import main
from rocm_perf.report.metadata import USER_KEYS, arch_match
from rocm_perf.trace import Trace
from rocm_perf.trace.rocpd_write import write_rocpd

FIXTURES = [
    DATA / "rocpd_v3_multistream.db",
    DATA / "rocpd_v3_docs_kernel_trace.db",
    DATA / "matmul_result.rpd",
    DATA / "mytrace.rpd.gz",
    DATA / "rocprofv3-csv",
    DATA / "rocprofv3-csv" / "kernel_trace.csv",
    DATA / "rocprofv3-csv" / "kernel_trace_truncated.csv",
    DATA / "torch-trace" / "mi250_minitoy_train_ROCm6_2_kineto.json.gz",
]

METADATA_KEYS = {
    "source_trace_path", "format", "observed_arch", "arch_match", "hardware_relevance_reason", "rocm_version",
    "gpu_device_ids", "gpu_clocks_mhz", "hostname", "command", "model_name", "profile_stage", "base_image",
    "resource_class", "server_flags", "benchmark_config_hash", "experiment_id", "trial_id",
}


def _json(capsys, *argv):
    assert main(["summary", *map(str, argv), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("profile", FIXTURES, ids=lambda p: p.name)
def test_every_fixture_summarizes(profile, capsys, tmp_path):
    assert main(["summary", str(profile), "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "Kernels by total time" in printed
    table = json.loads((tmp_path / "kernel_table.json").read_text())
    assert table["runtime_ns"] == sum(k["total_ns"] for k in table["kernels"]) > 0
    assert abs(sum(k["share"] for k in table["kernels"]) - 1) < 1e-9
    meta = json.loads((tmp_path / "profile_metadata.json").read_text())
    assert METADATA_KEYS <= set(meta)
    assert meta["source_trace_path"] == str(profile)
    assert (tmp_path / "profile_summary.md").read_text().startswith("# Profile summary")


def test_totals_equal_the_files_own_top_kernels_view(capsys):
    db = DATA / "rocpd_v3_multistream.db"
    doc = _json(capsys, db)
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    view = con.execute("SELECT name, total_calls, total_duration, percentage FROM top_kernels").fetchall()
    ours = [(k["name"], k["calls"], k["total_ns"] / 1000.0, k["share"] * 100) for k in doc["kernels"]]
    assert [v[:3] for v in view] == [o[:3] for o in ours]
    assert [round(v[3], 9) for v in view] == [round(o[3], 9) for o in ours]
    busy = con.execute("SELECT agent_id, GpuTime, WallTime FROM busy").fetchall()
    assert [(a["agent_id"], a["kernel_ns"], a["wall_ns"]) for a in doc["agents"]] == busy


def test_kernel_rows_carry_resources_and_min_max(capsys):
    doc = _json(capsys, DATA / "rocprofv3-csv" / "kernel_trace.csv")
    add = next(k for k in doc["kernels"] if k["name"].startswith("void addition_kernel"))
    assert add["short_name"] == "addition_kernel<float>" and add["calls"] == 3
    assert (add["min_ns"], add["max_ns"]) == (9840, 12800)
    assert add["category"] == "elementwise" and add["vgpr"] == 8 and add["sgpr"] == 16


def test_metadata_from_the_trace_and_from_meta(capsys, tmp_path):
    argv = ["summary", str(DATA / "rocpd_v3_multistream.db"), "--out", str(tmp_path), "--expect-arch", "gfx942",
            "--meta", "model_name=llama-8b", "--meta", "trial_id=7", "--json"]
    assert main(argv) == 0
    capsys.readouterr()
    meta = json.loads((tmp_path / "profile_metadata.json").read_text())
    assert meta["observed_arch"] == "gfx942" and meta["arch_match"] == "exact"
    assert meta["hostname"] == "mi300x-node-07" and meta["command"] == "./multistream --iters 3"
    assert meta["gpu_clocks_mhz"] == {"0": 2100} and meta["format"] == "rocpd-v3"
    assert meta["model_name"] == "llama-8b" and meta["trial_id"] == "7"
    assert all(meta[k] is None for k in USER_KEYS if k not in ("model_name", "trial_id"))
    assert meta["rocm_version"] is None  # rocpd does not store it


def test_arch_match_levels():
    assert arch_match("gfx942", "gfx942")[0] == "exact"
    assert arch_match("gfx942", "gfx942:sramecc+:xnack-")[0] == "exact"
    assert arch_match("gfx942", "gfx90a")[0] == "compatible"
    assert arch_match("gfx1100", "gfx942") == ("unknown", arch_match("gfx1100", "gfx942")[1])
    assert "different GPU family" in arch_match("gfx1100", "gfx942")[1]
    assert arch_match(None, "gfx942")[0] == "unknown"
    assert arch_match("gfx942", None)[0] == "unknown"


def test_top_and_all(capsys):
    db = DATA / "mytrace.rpd.gz"
    assert main(["summary", str(db), "--top", "3"]) == 0
    assert "25 more kernels" in capsys.readouterr().out
    assert main(["summary", str(db), "--all"]) == 0
    assert "more kernels" not in capsys.readouterr().out


# ---- bad input: one line naming the file and the problem, exit 2, no traceback -----------------


def _bad(tmp_path):
    cases = {}
    cases["missing"] = (tmp_path / "nope.db", "no such file")
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    cases["empty"] = (empty, "empty file")
    text = tmp_path / "notes.txt"
    text.write_text("hello, this is not a profile\n")
    cases["text"] = (text, "not a profile")
    binary = tmp_path / "blob.bin"
    binary.write_bytes(bytes(range(256)) * 4)
    cases["binary"] = (binary, "not a profile")
    other = tmp_path / "other.db"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE users(id INTEGER, name TEXT)")
    con.commit()
    con.close()
    cases["other-schema"] = (other, "another schema")
    truncated = tmp_path / "truncated.db"
    truncated.write_bytes((DATA / "rocpd_v3_multistream.db").read_bytes()[:50_000])
    cases["truncated"] = (truncated, "damaged or truncated database")
    truncated_rpd = tmp_path / "truncated.rpd"
    truncated_rpd.write_bytes((DATA / "matmul_result.rpd").read_bytes()[:40_000])
    cases["truncated-rpd"] = (truncated_rpd, "damaged or truncated database")
    gz = tmp_path / "cut.rpd.gz"
    gz.write_bytes((DATA / "mytrace.rpd.gz").read_bytes()[:100_000])
    cases["truncated-gzip"] = (gz, "damaged gzip")
    csv_file = tmp_path / "kernel_trace.csv"
    with open(DATA / "rocprofv3-csv" / "kernel_trace.csv", newline="") as f:
        rows = list(csv.reader(f))
    with open(csv_file, "w", newline="") as f:
        csv.writer(f).writerows(r[:10] for r in rows)  # cut before End_Timestamp
    cases["csv-missing-columns"] = (csv_file, "lacks column(s) End_Timestamp")
    no_kernels = tmp_path / "api_only.db"
    write_rocpd(Trace.from_rows(start=[], end=[], kernel=[], symbols=[]), no_kernels)
    cases["no-dispatches"] = (no_kernels, "holds no kernel dispatches")
    folder = tmp_path / "empty-folder"
    folder.mkdir()
    cases["folder-without-csv"] = (folder, "folder without CSV files")
    return cases


@pytest.mark.parametrize(
    "case",
    ["missing", "empty", "text", "binary", "other-schema", "truncated", "truncated-rpd", "truncated-gzip",
     "csv-missing-columns", "folder-without-csv", "no-dispatches"],
)
def test_bad_input_is_one_line_exit_2(case, tmp_path, capsys):
    path, problem = _bad(tmp_path)[case]
    assert main(["summary", str(path)]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert captured.out == ""
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"rocm-perf: error: {path}")
    assert problem in err
    assert "Traceback" not in err


def test_extra_sections_reach_terminal_json_markdown_and_files(monkeypatch, capsys, tmp_path):
    import rocm_perf.report.summary as summary
    from rocm_perf.report.summary_section import SummarySection

    section = SummarySection(key="probe", title="Probe section", data={"answer": 42},
                             markdown="probe markdown", text="probe text", files={"probe.json": {"x": 1}})
    monkeypatch.setattr(summary, "extra_sections", lambda trace: [section])
    db = str(DATA / "rocpd_v3_docs_kernel_trace.db")
    assert main(["summary", db, "--out", str(tmp_path)]) == 0
    assert "Probe section" in capsys.readouterr().out
    assert "probe markdown" in (tmp_path / "profile_summary.md").read_text()
    assert json.loads((tmp_path / "probe.json").read_text()) == {"x": 1}
    assert _json(capsys, db)["probe"] == {"answer": 42}


def test_host_backend_profile_says_its_times_are_cpu_times(tmp_path, capsys):
    # The agent as the host backend records it (backends/host_trace.py): a CPU agent marked backend=host.
    from rocm_perf.trace import Agent, KernelSymbol

    host = Agent(id=1, type="CPU", name="host", product="CPU via rocm-perf host runtime (2 threads)", cu_count=2,
                 extra={"backend": "host"})
    t = Trace.from_rows(start=[0, 100], end=[50, 180], kernel=[0, 0], symbols=[KernelSymbol("_Z1kv", "k()")],
                        agent=[1, 1], agents=[host])
    db = write_rocpd(t, tmp_path / "host.db", command="./k", hostname="laptop", pid=5)
    meta = _json(capsys, db, "--expect-arch", "gfx942")["metadata"]
    assert meta["timings"] == "CPU (host backend)" and meta["observed_arch"] is None
    assert meta["arch_match"] == "unknown" and "host backend" in meta["hardware_relevance_reason"]
    assert main(["summary", str(db)]) == 0
    assert "CPU timings from the host backend" in capsys.readouterr().out
