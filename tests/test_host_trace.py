"""The host runtime's raw log -> Trace -> rocpd v3, on a log the runtime really wrote
(tests/data/host/streams_events.host_log.jsonl: streams_events.cu, 1 block thread)."""

from __future__ import annotations

import sqlite3

import pytest

from conftest import DATA
from rocm_perf.backends.host_trace import read_host_log
from rocm_perf.errors import RocmPerfError
from rocm_perf.trace.load import load_trace
from rocm_perf.trace.model import UNKNOWN
from rocm_perf.trace.rocpd_write import write_rocpd

LOG = DATA / "host" / "streams_events.host_log.jsonl"


@pytest.fixture(scope="module")
def trace():
    return read_host_log(LOG)


def test_dispatches_symbols_and_streams(trace):
    assert len(trace) == 3
    by_name = {trace.symbols[int(k)].name: i for i, k in enumerate(trace.kernel)}
    assert set(by_name) == {"_Z7producePfii.kd", "_Z7consumeIfLi3EEvPKT_PS0_i.kd", "_Z9side_workPi.kd"}
    assert trace.stream[by_name["_Z7producePfii.kd"]] == 1
    assert trace.stream[by_name["_Z7consumeIfLi3EEvPKT_PS0_i.kd"]] == 2
    assert trace.stream[by_name["_Z9side_workPi.kd"]] == 3
    produce = by_name["_Z7producePfii.kd"]
    assert trace.grid[produce].tolist() == [64 * 256, 1, 1]  # work-items
    assert trace.workgroup[produce].tolist() == [256, 1, 1]
    assert trace.agents[0].type == "CPU" and set(trace.agent.tolist()) == {trace.agents[0].id}


def test_every_dispatch_joins_its_launch_call(trace):
    api = trace.api
    launches = {int(api.corr[i]) for i in range(len(api)) if api.name_of(i) == "hipLaunchKernel"}
    assert set(trace.corr.tolist()) == launches
    # each created stream's hipStream_t is known through its launch
    handles = {sid: info["handle"] for sid, info in trace.metadata["streams"].items()}
    assert handles[0] == 0 and all(handles[s] not in (None, 0) for s in (1, 2, 3))


def test_ordering_calls_carry_stream_and_event(trace):
    api = trace.api
    rows = {api.name_of(i): i for i in range(len(api))}
    wait = rows["hipStreamWaitEvent"]
    assert api.stream[wait] != UNKNOWN and api.event[wait] != UNKNOWN
    assert api.args[wait]["flags"] == "0"
    assert api.event[rows["hipEventSynchronize"]] != UNKNOWN


def test_digests_in_program_order(trace):
    copies = [i for i in range(len(trace.api)) if trace.api.name_of(i) in ("hipMemcpy", "hipMemcpyAsync")]
    digests = [trace.api.args[i]["rocm_perf_digest"] for i in copies if "rocm_perf_digest" in trace.api.args[i]]
    assert digests == trace.digests and len(digests) == 2
    assert all(d.count(":") == 1 and len(d.split(":")[0]) == 16 for d in digests)


def test_rocpd_round_trip_and_plain_sql(trace, tmp_path):
    db = write_rocpd(trace, tmp_path / "host.db", command="streams_events", hostname="test", pid=1)
    back = load_trace(db)
    assert back.metadata["format"] == "rocpd-v3"
    assert [s.name for s in back.symbols] == [s.name for s in trace.symbols]
    assert back.stream.tolist() == trace.stream.tolist()
    assert back.digests == trace.digests
    con = sqlite3.connect(db)
    kernels = con.execute("SELECT name, stream_id FROM kernels ORDER BY start").fetchall()
    assert [k[1] for k in kernels] == trace.stream.tolist()
    assert "consume<float, 3>" in " ".join(k[0] for k in kernels)
    assert con.execute("SELECT COUNT(*) FROM regions WHERE name = 'hipStreamWaitEvent'").fetchone()[0] == 1
    assert con.execute("SELECT COUNT(*) FROM region_args WHERE name = 'rocm_perf_digest'").fetchone()[0] == 2
    assert con.execute("SELECT COUNT(*) FROM top_kernels").fetchone()[0] == 3


def test_not_a_log(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type":"meta","pid":1}\nnot json\n')
    with pytest.raises(RocmPerfError, match=r"bad.jsonl:2: not a host runtime log line"):
        read_host_log(bad)
    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"type":"kernel","id":0,"mangled":"k","demangled":"k"}\n')
    with pytest.raises(RocmPerfError, match="no meta record"):
        read_host_log(empty)
