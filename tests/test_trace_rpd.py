"""Legacy RPD: rocmProfileData files (plain and gzip'd) and rocm-trace-lite's variant."""

import gzip
import sqlite3

import numpy as np

from conftest import DATA
from rocm_perf.trace.load import load_trace
from rocm_perf.trace.rpd_read import parse_rpd_args


def _kernel_view(db):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    return con.execute("SELECT COUNT(*), SUM(\"end\" - start) FROM op WHERE opType = 'KernelExecution'").fetchone()


def test_matmul_kernels_match_the_files_own_op_view():
    path = DATA / "matmul_result.rpd"
    t = load_trace(path)
    count, total = _kernel_view(path)
    assert (len(t), t.runtime_ns) == (count, total) == (29, 26_399_795)
    assert t.metadata["format"] == "rpd-legacy" and t.metadata["pid"] == 1087077
    assert np.all(np.diff(t.start) >= 0)
    first = t.symbol_name(0)
    assert first.startswith("Cijk_Ailk_Bljk_SB_MT128x64x16")
    assert list(t.grid[0]) == [1792, 782, 1] and list(t.workgroup[0]) == [256, 1, 1]
    # kernel ops join their launch call through rocpd_api_ops: corr is the API row id
    launch_rows = {int(c) for c in t.api.corr}
    assert set(t.corr.tolist()) <= launch_rows
    assert set(t.stream.tolist()) == {0}


def test_gzipped_rpd_is_read_through_a_temp_copy(tmp_path):
    path = DATA / "mytrace.rpd.gz"
    t = load_trace(path)
    plain = tmp_path / "mytrace.rpd"
    plain.write_bytes(gzip.decompress(path.read_bytes()))
    count, total = _kernel_view(plain)
    assert len(t) == count == 1228 and t.runtime_ns == total
    assert t.metadata["source_path"] == str(path)
    # the tracer's own rows (UserMarker, ApiTable::writeRows) are not HIP API calls
    assert all(n.startswith("hip") for n in t.api.names)
    graph = [r for r in range(len(t.api)) if t.api.name_of(r) == "hipGraphLaunch"]
    assert graph and t.api.args[graph[0]]["stream"] == "0x0" and t.api.stream[graph[0]] == 0


def test_parse_rpd_args():
    assert parse_rpd_args("graphExec = 0x24922d90 | stream = 0x0") == {"graphExec": "0x24922d90", "stream": "0x0"}
    assert parse_rpd_args("") == {} and parse_rpd_args(None) == {}


def test_rocm_trace_lite_variant_reads_dims_from_completion_signal(tmp_path):
    # rocm-trace-lite's layout (per FORMATS.md): roctxId column, api_id in rocpd_kernelapi,
    # "hwq=.. wg=x,y,z grid=x,y,z" in completionSignal. Built here from those column facts.
    db = tmp_path / "rtl.db"
    con = sqlite3.connect(db)
    con.executescript(
        """
        CREATE TABLE rocpd_string(id INTEGER PRIMARY KEY, string TEXT);
        CREATE TABLE rocpd_op(id INTEGER PRIMARY KEY, gpuId INT, queueId INT, sequenceId INT, completionSignal TEXT,
                              start INT, "end" INT, description_id INT, opType_id INT, roctxId INT);
        CREATE TABLE rocpd_api(id INTEGER PRIMARY KEY, pid INT, tid INT, start INT, "end" INT, apiName_id INT, args_id INT);
        CREATE TABLE rocpd_api_ops(id INTEGER PRIMARY KEY, api_id INT, op_id INT);
        CREATE TABLE rocpd_kernelapi(api_id INTEGER PRIMARY KEY, stream TEXT, gridX INT, gridY INT, gridZ INT,
                                     workgroupX INT, workgroupY INT, workgroupZ INT, groupSegmentSize INT,
                                     privateSegmentSize INT, kernelName_id INT);
        CREATE TABLE rocpd_metadata(id INTEGER PRIMARY KEY, tag TEXT, value TEXT);
        INSERT INTO rocpd_string VALUES (1, ''), (2, 'KernelExecution'), (3, 'my_kernel'), (4, 'hipLaunchKernel'),
                                        (5, 'CopyDeviceToHost'), (6, 'stream=0x5555');
        INSERT INTO rocpd_op VALUES (1, 0, 0, 0, 'hwq=0x7f00 wg=128,1,1 grid=4096,2,1', 100, 300, 3, 2, 0),
                                    (2, 0, 0, 1, '', 400, 450, 1, 5, 0);
        INSERT INTO rocpd_api VALUES (10, 42, 43, 90, 95, 4, 6);
        INSERT INTO rocpd_api_ops VALUES (1, 10, 1);
        """
    )
    con.commit()
    con.close()
    t = load_trace(db)
    assert len(t) == 1 and t.runtime_ns == 200 and t.symbol_name(0) == "my_kernel"
    assert list(t.workgroup[0]) == [128, 1, 1] and list(t.grid[0]) == [4096, 2, 1]
    assert t.corr[0] == 10 and t.api.stream[0] == 0x5555 and t.metadata["pid"] == 42
