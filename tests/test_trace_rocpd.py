"""rocpd v3: reading the fixtures, and our writer's round trip."""

import sqlite3

import numpy as np
import pytest

from conftest import DATA
from rocm_perf.errors import RocmPerfError
from rocm_perf.trace import Agent, ApiCalls, KernelSymbol, Trace, UNKNOWN
from rocm_perf.trace.load import load_trace
from rocm_perf.trace.rocpd_read import parse_pointer
from rocm_perf.trace.rocpd_write import write_rocpd

MULTI = DATA / "rocpd_v3_multistream.db"
DOCS = DATA / "rocpd_v3_docs_kernel_trace.db"


def test_multistream_dispatches_symbols_agents_and_metadata():
    t = load_trace(MULTI)
    assert len(t) == 15 and t.runtime_ns == 810_000
    assert np.all(np.diff(t.start) >= 0)
    names = {s.display_name.split("(")[0] for s in t.symbols}
    assert names == {"produce_kernel", "side_kernel", "consume_kernel", "decoy_kernel", "reduce_kernel"}
    reduce = next(s for s in t.symbols if s.display_name.startswith("reduce_kernel"))
    assert (reduce.name, reduce.vgpr, reduce.sgpr, reduce.lds_bytes) == ("_Z13reduce_kernelPKfPfi.kd", 40, 22, 1024)
    gpu = t.gpu_agents()
    assert [(a.id, a.name, a.product, a.cu_count) for a in gpu] == [(2, "gfx942", "AMD Instinct MI300X", 304)]
    assert gpu[0].extra["max_engine_clk_fcompute"] == 2100
    assert set(t.stream.tolist()) == {0, 1, 2, 3} and set(t.queue.tolist()) == {1, 2, 3, 4}
    md = t.metadata
    assert md["format"] == "rocpd-v3" and md["hostname"] == "mi300x-node-07"
    assert md["command"] == "./multistream --iters 3" and md["pid"] == 41877 and md["api_trace"] is True
    assert md["streams"][1]["handle"] == 0x55D1C0A3E2B0


def test_multistream_api_calls_join_dispatches_by_stack_id():
    t = load_trace(MULTI)
    api = t.api
    assert isinstance(api, ApiCalls) and len(api) == 27
    launches = [r for r in range(len(api)) if api.name_of(r) == "hipLaunchKernel"]
    assert len(launches) == 15
    # each launch's correlation id is a dispatch's, and the launch's stream pointer maps to the dispatch's stream
    handle_of = {sid: info["handle"] for sid, info in t.metadata["streams"].items()}
    by_corr = {int(c): i for i, c in enumerate(t.corr)}
    for r in launches:
        d = by_corr[int(api.corr[r])]
        assert handle_of[int(t.stream[d])] == api.stream[r]
    waits = [r for r in range(len(api)) if api.name_of(r) == "hipStreamWaitEvent"]
    records = [r for r in range(len(api)) if api.name_of(r) == "hipEventRecord"]
    assert len(waits) == 3 and api.event[waits[0]] == api.event[records[0]] == 0x55D1C0A51000
    assert api.stream[waits[0]] == 0x55D1C0A3F180
    sync = [r for r in range(len(api)) if api.name_of(r) == "hipDeviceSynchronize"]
    assert all(api.stream[r] == UNKNOWN and api.event[r] == UNKNOWN for r in sync)


def test_docs_db_has_no_api_trace():
    t = load_trace(DOCS)
    assert len(t) == 9 and t.api is None and t.metadata["api_trace"] is False
    assert t.runtime_ns == 96_160


def test_parse_pointer():
    assert parse_pointer("0x10") == 16 and parse_pointer("0") == 0 and parse_pointer("nullptr") == 0
    assert parse_pointer("garbage") == UNKNOWN and parse_pointer(None) == UNKNOWN


def _assert_same_trace(a: Trace, b: Trace):
    for col in ("start", "end", "agent", "queue", "stream", "corr", "grid", "workgroup"):
        assert np.array_equal(getattr(a, col), getattr(b, col)), col
    if a.lds_bytes is not None:  # without it the writer stores each symbol's static LDS
        assert np.array_equal(a.lds_bytes, b.lds_bytes)
    assert [a.symbols[k] for k in a.kernel] == [b.symbols[k] for k in b.kernel]
    assert [(x.id, x.type, x.name, x.product, x.cu_count, x.extra) for x in a.agents] == [
        (x.id, x.type, x.name, x.product, x.cu_count, x.extra) for x in b.agents
    ]
    assert a.digests == b.digests
    if a.api is None:
        assert b.api is None
    else:
        for col in ("start", "end", "tid", "corr", "stream", "event"):
            assert np.array_equal(getattr(a.api, col), getattr(b.api, col)), col
        assert [a.api.name_of(r) for r in range(len(a.api))] == [b.api.name_of(r) for r in range(len(b.api))]


def test_fixture_round_trips_through_our_writer(tmp_path):
    original = load_trace(MULTI)
    out = write_rocpd(original, tmp_path / "copy.db")
    again = load_trace(out)
    _assert_same_trace(original, again)
    assert again.api.args[0]["function_address"] == "0x55d1b0000040"
    for key in ("hostname", "command", "pid", "api_trace", "streams", "queues"):
        assert again.metadata[key] == original.metadata[key], key


def test_written_db_is_v3_with_uuid_tables_and_working_views(tmp_path):
    out = write_rocpd(load_trace(MULTI), tmp_path / "w.db")
    con = sqlite3.connect(out)
    tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' AND name LIKE 'rocpd_kernel_dispatch%'")]
    assert len(tables) == 1 and len(tables[0]) == len("rocpd_kernel_dispatch_") + 36
    assert con.execute("SELECT value FROM rocpd_metadata WHERE tag='schema_version'").fetchone() == ("3",)
    guid = con.execute("SELECT value FROM rocpd_metadata WHERE tag='guid'").fetchone()[0]
    assert guid[14] == "7"  # UUIDv7
    assert con.execute("SELECT COUNT(*) FROM kernels").fetchone() == (15,)
    top = con.execute("SELECT name, total_calls, total_duration FROM top_kernels").fetchall()
    fixture = sqlite3.connect(f"file:{MULTI}?mode=ro", uri=True)
    assert top == fixture.execute("SELECT name, total_calls, total_duration FROM top_kernels").fetchall()
    assert con.execute("SELECT agent_id, GpuTime, WallTime FROM busy").fetchall() == [(2, 810000, 833000)]
    launch = con.execute(
        "SELECT COUNT(*) FROM kernels K JOIN regions R ON R.stack_id = K.stack_id WHERE R.name = 'hipLaunchKernel'"
    ).fetchone()
    assert launch == (15,)
    assert con.execute("SELECT COUNT(*) FROM region_args WHERE name='stream'").fetchone()[0] == 24  # as in the fixture


def test_generated_trace_round_trips_with_digests(tmp_path):
    syms = [KernelSymbol("_Z3fooPf.kd", "foo(float*)", vgpr=10, agpr=0, sgpr=12, lds_bytes=0, scratch_bytes=16)]
    api = ApiCalls(
        names=["hipLaunchKernel", "hipMemcpy"],
        name=np.array([0, 1, 0, 1], dtype=np.int32),
        start=np.array([0, 50, 100, 150]),
        end=np.array([5, 60, 105, 160]),
        tid=np.array([7, 7, 7, 7]),
        corr=np.array([1, 2, 3, 4]),
        stream=np.array([0, UNKNOWN, 0, UNKNOWN]),
        event=np.full(4, UNKNOWN),
        args={1: {"kind": "hipMemcpyDeviceToHost"}, 3: {"kind": "hipMemcpyDeviceToHost"}},
    )
    t = Trace.from_rows(
        start=[10, 110], end=[40, 140], kernel=[0, 0], symbols=syms, agent=[3, 3], queue=[0, 0], stream=[0, 0],
        corr=[1, 3], grid=[[64, 1, 1], [64, 1, 1]], workgroup=[[32, 1, 1], [32, 1, 1]],
        agents=[Agent(3, "GPU", "host-cpu", product="host", cu_count=2)], api=api, digests=["aa11", "bb22"],
    )
    out = write_rocpd(t, tmp_path / "sub" / "g.db", command="./foo 1", hostname="box", pid=99)
    back = load_trace(out)
    _assert_same_trace(t, back)
    assert back.metadata["command"] == "./foo 1" and back.metadata["hostname"] == "box" and back.metadata["pid"] == 99
    con = sqlite3.connect(out)
    rows = con.execute("SELECT R.name, A.value FROM region_args A JOIN regions R ON R.id = A.id WHERE A.name='rocm_perf_digest'").fetchall()
    assert rows == [("hipMemcpy", "aa11"), ("hipMemcpy", "bb22")]
    assert not list(tmp_path.joinpath("sub").glob("*.tmp"))


def test_digests_without_api_trace_survive(tmp_path):
    t = Trace.from_rows(start=[0], end=[1], kernel=[0], symbols=[KernelSymbol("k", "k()")], digests=["d1", "d2"])
    back = load_trace(write_rocpd(t, tmp_path / "d.db"))
    assert back.digests == ["d1", "d2"] and back.api is None


def test_write_replaces_atomically(tmp_path):
    target = tmp_path / "x.db"
    target.write_text("old")
    t = Trace.from_rows(start=[0], end=[1], kernel=[0], symbols=[KernelSymbol("k", "k()")])
    write_rocpd(t, target)
    assert len(load_trace(target)) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.db"]


def test_merged_file_with_two_uuid_sets_reads_both(tmp_path):
    # Merge our own second set into a copy of the fixture: the plain views only cover the first.
    a = load_trace(MULTI)
    second = write_rocpd(Trace.from_rows(start=[2_000_000_000], end=[2_000_050_000], kernel=[0],
                                         symbols=[KernelSymbol("_Z5extrav.kd", "extra()")], agent=[2], stream=[0], queue=[1]),
                         tmp_path / "second.db")
    merged = tmp_path / "merged.db"
    merged.write_bytes(MULTI.read_bytes())
    con = sqlite3.connect(merged)
    con.execute("ATTACH ? AS other", (str(second),))
    for name, sql in con.execute("SELECT name, sql FROM other.sqlite_master WHERE type='table' AND name LIKE 'rocpd_%'").fetchall():
        con.execute(sql)
        con.execute(f'INSERT INTO main."{name}" SELECT * FROM other."{name}"')
    con.commit()
    con.close()
    t = load_trace(merged)
    assert len(t) == 16 and t.metadata["uuid_sets"] == 2
    assert t.symbol_name(len(t) - 1) == "extra()"
    assert t.runtime_ns == a.runtime_ns + 50_000


def test_file_without_views_reads_the_same(tmp_path):
    bare = tmp_path / "noviews.db"
    bare.write_bytes(MULTI.read_bytes())
    con = sqlite3.connect(bare)
    for (view,) in con.execute("SELECT name FROM sqlite_master WHERE type='view'").fetchall():
        con.execute(f'DROP VIEW "{view}"')
    con.commit()
    con.close()
    _assert_same_trace(load_trace(MULTI), load_trace(bare))


def test_rocprofv3_output_folder_with_one_results_db(tmp_path):
    host = tmp_path / "out" / "mi300x-node-07"
    host.mkdir(parents=True)
    (host / "41877_results.db").write_bytes(MULTI.read_bytes())
    t = load_trace(tmp_path / "out")
    assert len(t) == 15 and t.metadata["source_path"] == str(host / "41877_results.db")
    (host / "41878_results.db").write_bytes(MULTI.read_bytes())
    with pytest.raises(RocmPerfError, match="several databases"):
        load_trace(tmp_path / "out")
