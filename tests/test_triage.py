"""`rocm-perf triage`: categories, overlap, idle gaps and fuse opportunities, checked against
independent computations on real profiles, and the artifacts on every format."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest

from conftest import DATA
from rocm_perf.analysis.categories import categorize
from rocm_perf.analysis.fusion import fuse_opportunities
from rocm_perf.analysis.idle_gaps import LAUNCH, SYNC, idle_gaps
from rocm_perf.analysis.overlap import overlap_table
from rocm_perf.cli import main
from rocm_perf.trace.load import load_trace
from rocm_perf.trace.model import KernelSymbol, Trace

MULTISTREAM = DATA / "rocpd_v3_multistream.db"
MI250 = DATA / "torch-trace" / "mi250_minitoy_train_ROCm6_2_kineto.json.gz"
A100 = DATA / "torch-trace" / "a100_control.json.gz"
ARTIFACTS = {"kernel_table.json", "overlap_opportunities.json", "fuse_opportunities.json", "profile_summary.md",
             "profile_metadata.json"}
EVERY_FORMAT = [MULTISTREAM, DATA / "rocpd_v3_docs_kernel_trace.db", DATA / "matmul_result.rpd",
                DATA / "mytrace.rpd.gz", DATA / "rocprofv3-csv", DATA / "rocprofv3-csv" / "kernel_trace.csv", MI250]


@pytest.mark.parametrize("profile", EVERY_FORMAT, ids=lambda p: p.name)
def test_every_format_triages(profile, tmp_path, capsys):
    assert main(["triage", str(profile), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Kernels by total time" in out and "Overlap by category" in out
    assert {p.name for p in tmp_path.iterdir()} == ARTIFACTS
    table = json.loads((tmp_path / "kernel_table.json").read_text())
    overlap = json.loads((tmp_path / "overlap_opportunities.json").read_text())
    assert sum(k["total_ns"] for k in overlap["kernels"]) == table["runtime_ns"]
    for k in overlap["kernels"]:
        assert k["exposed_ns"] + k["hidden_ns"] == k["total_ns"] and 0 <= k["exposed_ns"]
    assert (tmp_path / "profile_summary.md").read_text().startswith("# Profile triage")


def test_rocm_native_categories_of_a_pytorch_trace_on_mi250(tmp_path, capsys):
    assert main(["triage", str(MI250), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    cats = {k["name"]: k["category"] for k in doc["kernel_table"]["kernels"]}
    assert {c for n, c in cats.items() if n.startswith("Cijk_")} == {"gemm"}
    assert {c for n, c in cats.items() if "reduce_kernel" in n} == {"reduction"}
    assert {c for n, c in cats.items() if "multi_tensor_apply" in n} == {"optimizer"}


def _brute_exposed(starts: list[int], ends: list[int]) -> list[int]:
    """Per interval, the time nothing else overlapped it: walk every elementary segment."""
    points = sorted(set(starts) | set(ends))
    out = [0] * len(starts)
    for a, b in zip(points, points[1:]):
        active = [i for i, (s, e) in enumerate(zip(starts, ends)) if s <= a and b <= e]
        if len(active) == 1:
            out[active[0]] += b - a
    return out


def test_exposed_time_equals_a_brute_force_walk():
    trace = load_trace(MULTISTREAM)
    table = overlap_table(trace)
    exposed = _brute_exposed(trace.start.tolist(), trace.end.tolist())
    names = [trace.symbol_name(i) for i in range(len(trace))]
    expected = {}
    for name, x in zip(names, exposed):
        expected[name] = expected.get(name, 0) + x
    assert {r.name: r.exposed_ns for r in table.kernels} == expected
    assert any(r.hidden_ns > 0 for r in table.kernels)  # the streams do overlap


def test_communication_not_overlapped_with_compute():
    trace = load_trace(A100)
    table = overlap_table(trace)
    (comm,) = table.communication
    cats = np.array([categorize(trace.symbols[k].display_name) for k in trace.kernel.tolist()])
    is_comm = cats == "communication"
    compute = ~np.isin(cats, ["communication", "memory"])
    # brute force: per collective, the time covered by the union of compute kernels
    cs, ce = trace.start[compute], trace.end[compute]
    covered = 0
    for s, e in zip(trace.start[is_comm].tolist(), trace.end[is_comm].tolist()):
        inside = (cs < e) & (ce > s)
        pieces = sorted(zip(np.maximum(cs[inside], s).tolist(), np.minimum(ce[inside], e).tolist()))
        reach = s
        for a, b in pieces:
            covered += max(0, b - max(a, reach))
            reach = max(reach, b)
    assert comm.overlapped_ns == covered
    assert comm.total_ns == int((trace.end - trace.start)[is_comm].sum()) == comm.overlapped_ns + comm.exposed_ns
    assert 0 < comm.exposed_ns < comm.total_ns


def test_idle_gaps_add_up_and_name_host_synchronization():
    trace = load_trace(MULTISTREAM)
    (agent,) = idle_gaps(trace, longest=100)
    order = np.argsort(trace.start)
    busy_until, idle, gaps = trace.start[order][0], 0, []
    for s, e in zip(trace.start[order].tolist(), trace.end[order].tolist()):
        if s > busy_until:
            gaps.append((busy_until, s))
            idle += s - busy_until
        busy_until = max(busy_until, e)
    assert agent.idle_ns == idle and agent.gaps == len(gaps)
    assert agent.busy_ns + agent.idle_ns == agent.span_ns == int(trace.end.max() - trace.start.min())
    con = sqlite3.connect(MULTISTREAM)
    syncs = [r[0] for r in con.execute("SELECT \"end\" FROM regions WHERE name LIKE '%Synchronize'")]
    for g in agent.longest:
        returned_inside = any(g.start_ns <= t <= g.end_ns for t in syncs)
        assert (g.cause == SYNC) == returned_inside, g
    assert {g.cause for g in agent.longest} <= {SYNC, LAUNCH}
    assert sum(v["ns"] for v in agent.by_cause.values()) == agent.idle_ns


def test_a_repeated_sequence_of_short_kernels_is_a_fuse_opportunity():
    names = ["scale()", "bias()", "gelu()", "big_gemm()"]
    symbols = [KernelSymbol(n, n) for n in names]
    start, end, kernel = [], [], []
    t = 0
    for _ in range(6):  # scale > bias > gelu, back to back and short, then one long GEMM
        for k, d in ((0, 3_000), (1, 2_000), (2, 4_000), (3, 400_000)):
            start.append(t)
            end.append(t + d)
            kernel.append(k)
            t += d + 1_500  # a 1.5 us launch gap between dispatches
    trace = Trace.from_rows(start=start, end=end, kernel=kernel, symbols=symbols, stream=[1] * len(start))
    patterns = fuse_opportunities(trace)
    best = patterns[0]
    assert best.kernels == ["scale()", "bias()", "gelu()"] and best.occurrences == 6
    assert best.kernel_ns == 6 * 9_000 and best.gap_ns == 6 * 2 * 1_500
    assert all("big_gemm()" not in p.kernels for p in patterns)
    assert all(not (p.occurrences <= 6 and len(p.kernels) < 3 and "gelu()" in p.kernels) for p in patterns[1:])


def test_fuse_opportunities_on_a_real_vllm_trace(tmp_path, capsys):
    assert main(["triage", str(DATA / "mytrace.rpd.gz"), "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    fuse = json.loads((tmp_path / "fuse_opportunities.json").read_text())
    assert fuse["patterns"], "a vLLM decode trace has repeated short-kernel sequences"
    trace = load_trace(DATA / "mytrace.rpd.gz")
    names = [trace.symbol_name(i) for i in np.argsort(trace.start).tolist()]
    for p in fuse["patterns"]:
        seq = p["kernels"]
        # the pattern really occurs that often back to back in launch order
        hits = sum(names[i: i + len(seq)] == seq for i in range(len(names) - len(seq) + 1))
        assert hits >= p["occurrences"] >= 2
        assert p["dispatches_saved"] == (len(seq) - 1) * p["occurrences"]


def test_bad_options_are_one_line(capsys):
    assert main(["triage", str(MI250), "--top", "0"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
