"""`export --perfetto OUT.pftrace`: Perfetto's protobuf format, read back with the protos the
`perfetto` package on PyPI ships (its trace processor downloads a binary at run time, which these
machines cannot), checked against the trace slice by slice and against the JSON export."""

from __future__ import annotations

import json
from collections import Counter, defaultdict

import numpy as np
import pytest

from conftest import DATA
from rocm_perf.analysis.critical_path import analyze_critical_path
from rocm_perf.cli import main
from rocm_perf.trace.load import load_trace
from scale_trace import generate, write_profile

perfetto_trace_pb2 = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")

PROFILES = [
    DATA / "rocpd_v3_multistream.db",
    DATA / "rocpd_v3_docs_kernel_trace.db",
    DATA / "matmul_result.rpd",
    DATA / "rocprofv3-csv",
    DATA / "torch-trace" / "mi250_minitoy_train_ROCm6_2_kineto.json.gz",
]


class Decoded:
    """A .pftrace read back: slices per track, interned names, flows, track names."""

    def __init__(self, path):
        trace = perfetto_trace_pb2.Trace.FromString(path.read_bytes())
        self.names: dict[int, str] = {}
        self.annotation_names: dict[int, str] = {}
        self.strings: dict[int, str] = {}
        self.tracks: dict[int, str] = {}
        self.parents: dict[int, int] = {}
        self.slices: list[dict] = []  # name, track, start, end, category iids, annotations, flows
        self.instants: list[dict] = []
        open_slices: dict[int, list[dict]] = defaultdict(list)
        events = []
        cleared = False
        for i, p in enumerate(trace.packet):
            assert p.trusted_packet_sequence_id == 1
            if p.sequence_flags & 1:
                assert i == 0, "incremental state is cleared on the first packet only"
                cleared = True
            if p.HasField("interned_data"):
                for e in p.interned_data.event_names:
                    self.names[e.iid] = e.name
                for e in p.interned_data.debug_annotation_names:
                    self.annotation_names[e.iid] = e.name
                for e in p.interned_data.debug_annotation_string_values:
                    self.strings[e.iid] = e.str.decode()
            if p.HasField("track_descriptor"):
                d = p.track_descriptor
                self.tracks[d.uuid] = d.name
                if d.HasField("parent_uuid"):
                    self.parents[d.uuid] = d.parent_uuid
            if p.HasField("track_event"):
                assert p.sequence_flags & 2, "every event says it needs the interned state"
                events.append((p.timestamp, i, p.track_event))
        assert cleared
        # As the trace processor does: by timestamp, file order for ties; slices nest per track.
        for ts, _, e in sorted(events, key=lambda x: (x[0], x[1])):
            assert e.track_uuid in self.tracks, "every event's track is described"
            if e.type == 1:
                s = {"name": self.names[e.name_iid], "track": e.track_uuid, "start": ts, "categories": list(e.category_iids),
                     "annotations": {self.annotation_names[a.name_iid]: self._value(a) for a in e.debug_annotations},
                     "flows": list(e.flow_ids), "terminating": list(e.terminating_flow_ids)}
                open_slices[e.track_uuid].append(s)
            elif e.type == 2:
                assert open_slices[e.track_uuid], "an end without a begin on its track"
                s = open_slices[e.track_uuid].pop()
                s["end"] = ts
                self.slices.append(s)
            else:
                self.instants.append({"name": self.names[e.name_iid], "track": e.track_uuid, "ts": ts})
        assert not any(open_slices.values()), "a begin without an end"

    def _value(self, a):
        if a.HasField("string_value_iid"):
            return self.strings[a.string_value_iid]
        if a.HasField("bool_value"):
            return a.bool_value
        return a.int_value

    def in_process(self, name_part: str) -> list[dict]:
        roots = {u for u, n in self.tracks.items() if name_part in n and u not in self.parents}
        inside = {u for u in self.tracks if u in roots or self.parents.get(u) in roots}
        return [s for s in self.slices if s["track"] in inside]


def test_generated_profile_round_trips_exactly(tmp_path):
    profile = generate(3_000, streams=4, seed=5)
    db = write_profile(profile, tmp_path / "scale.db")
    out = tmp_path / "scale.pftrace"
    assert main(["export", str(db), "--perfetto", str(out)]) == 0
    decoded = Decoded(out)
    trace = load_trace(db)
    kernels = [s for s in decoded.slices if s["annotations"].get("kernel") is not None and "row" in s["annotations"]
               and s["track"] not in {u for u, n in decoded.tracks.items() if n.startswith("critical path")}]
    assert len(kernels) == len(trace)
    by_row = {s["annotations"]["row"]: s for s in kernels}
    for row in range(len(trace)):
        s = by_row[row]
        assert (s["start"], s["end"]) == (int(trace.start[row]), int(trace.end[row]))  # exact ns
        assert s["name"] == trace.symbol_name(row)
        assert s["annotations"]["correlation_id"] == int(trace.corr[row])
    # every kernel has its launch arrow: one flow id leaving an API slice, ending on the kernel
    api = [s for s in decoded.slices if s["name"] == "hipLaunchKernel"]
    assert len(api) == int((profile.api_kind == 0).sum())
    leaving = Counter(f for s in api for f in s["flows"])
    ending = Counter(f for s in kernels for f in s["terminating"])
    assert set(leaving) <= set(ending) and len(leaving) == len(trace) and max(leaving.values()) == 1
    # the critical path's slices are the path's dispatches; their durations add up to its length
    cp = analyze_critical_path(trace)
    path = [s for s in decoded.in_process("critical path")]
    assert sorted(s["annotations"]["row"] for s in path) == sorted(cp.path.tolist())
    assert sum(s["end"] - s["start"] for s in path) == cp.critical_path_ns == profile.critical_path_ns
    # the same dependency arrows as the JSON export draws
    json_out = tmp_path / "scale.json"
    assert main(["export", str(db), "--perfetto", str(json_out)]) == 0
    doc = json.loads(json_out.read_text())
    json_arrows = sum(1 for e in doc["traceEvents"] if e.get("cat") == "dependency" and e["ph"] == "s")
    dep_out = Counter(f for s in kernels for f in s["flows"])
    dep_in = Counter(f for s in kernels for f in s["terminating"] if f not in leaving)
    assert len(dep_out) == len(dep_in) == json_arrows > 0
    assert out.stat().st_size < json_out.stat().st_size / 2


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_every_profile_format_exports_a_readable_pftrace(profile, tmp_path):
    out = tmp_path / "t.pftrace"
    assert main(["export", str(profile), "--perfetto", str(out)]) == 0
    decoded = Decoded(out)
    trace = load_trace(profile)
    described = set(decoded.tracks)
    assert all(s["track"] in described for s in decoded.slices)
    kernel_slices = [s for s in decoded.slices if "row" in s["annotations"] and "kernel" in s["annotations"]]
    assert len(kernel_slices) == len(trace)
    if trace.api is not None:
        assert sum(1 for s in decoded.slices if s["name"] in set(trace.api.names)) >= len(trace.api)
    if trace.markers is not None:
        names = Counter(trace.markers.name_of(r) for r in range(len(trace.markers)))
        got = Counter(s["name"] for s in decoded.slices + decoded.instants if s["name"] in names)
        assert got == names


def test_api_arguments_become_annotations(tmp_path):
    out = tmp_path / "m.pftrace"
    assert main(["export", str(DATA / "rocpd_v3_multistream.db"), "--perfetto", str(out)]) == 0
    decoded = Decoded(out)
    trace = load_trace(DATA / "rocpd_v3_multistream.db")
    api = trace.api
    calls = [s for s in decoded.slices if s["name"] in set(api.names)]
    by_start = defaultdict(list)
    for s in calls:
        by_start[(s["start"], s["name"])].append(s["annotations"])
    for row in range(len(api)):
        expected = {k: ("null" if v is None else v) for k, v in api.args.get(row, {}).items()}
        got = by_start[(int(api.start[row]), api.name_of(row))]
        assert any({k: v for k, v in g.items() if k != "correlation_id"} == expected for g in got)


def test_unwritable_folder_is_one_line_error(tmp_path, capsys):
    code = main(["export", str(DATA / "rocpd_v3_multistream.db"), "--perfetto", str(tmp_path / "no" / "t.pftrace")])
    assert code != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "does not exist" in err[0]


def test_rows_encoder_matches_protobuf():
    """The numpy encoder against protobuf's own serializer, on values across the varint widths."""
    from rocm_perf.report.protobuf_rows import Rows, join, message_field, varint_field

    values = np.array([0, 1, 127, 128, 300, 2**35 + 7, 2**63 - 1, -1, -(2**40)], dtype=np.int64)
    rows = join(varint_field(8, values), message_field(11, join(varint_field(9, np.full(len(values), 1)),
                                                                varint_field(11, np.abs(values)))))
    starts = rows.start
    for i, v in enumerate(values.tolist()):
        packet = perfetto_trace_pb2.TracePacket()
        packet.timestamp = v % (1 << 64)
        packet.track_event.type = 1
        packet.track_event.track_uuid = abs(v) % (1 << 64)
        assert rows.data[starts[i]: starts[i] + rows.length[i]].tobytes() == packet.SerializeToString()
    assert Rows.empty(3).length.tolist() == [0, 0, 0]
