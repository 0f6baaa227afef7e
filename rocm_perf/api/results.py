"""The analyses of the Python API: each returns an object whose `.to_dict()` is the data of the
command's JSON (`rocm-perf summary --json`, `critical-path --json`, `compare.json`, `analysis.json`,
`triage --json`, `hotspots.json`) and whose tables are pandas DataFrames.

Each takes a path (any format `rp.load` reads) or an already loaded Trace. The MCP server's tools
(rocm_perf/agents/tools.py) call these same functions and return their `.to_dict()`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Union

from rocm_perf.analysis.analyze import Analysis as AnalysisModel
from rocm_perf.analysis.analyze import analyze_trace
from rocm_perf.analysis.compare import DEFAULT_ALPHA, DEFAULT_MIN_CHANGE
from rocm_perf.analysis.compare import Comparison as ComparisonModel
from rocm_perf.analysis.critical_path import CriticalPathResult, analyze_critical_path
from rocm_perf.analysis.fusion import DEFAULT_MAX_GAP_NS, DEFAULT_SHORT_NS
from rocm_perf.api.frames import frame
from rocm_perf.api.trace import Trace, trace_of
from rocm_perf.errors import RocmPerfError
from rocm_perf.report.analyze_report import compile_resources, read_peaks
from rocm_perf.report.compare_report import compare_document
from rocm_perf.report.critical_path_report import result_json
from rocm_perf.report.hotspots_report import build_hotspots, hotspots_document
from rocm_perf.report.summary import Summary as SummaryModel
from rocm_perf.report.summary import build_summary, summary_json
from rocm_perf.report.triage_report import Triage as TriageModel
from rocm_perf.report.triage_report import triage as triage_trace
from rocm_perf.report.triage_report import triage_document
from rocm_perf.trace.model import Trace as TraceModel
from rocm_perf.trace.names import short_name

Profile = Union[str, Path, TraceModel]


def _with_dispatches(profile: Profile) -> Trace:
    trace = trace_of(profile)
    if not len(trace):
        raise RocmPerfError(f"{trace.metadata.get('source_path', 'the profile')}: the profile holds no kernel dispatches")
    return trace


class Summary:
    """A profile's kernel table and what the summary adds to it: `to_dict()` = `rocm-perf summary
    --json` (the metadata, the kernels, categories and GPUs, the critical path's section, with
    `by_phase` the phases'); `kernels()` the table; `summary` its own record."""

    def __init__(self, summary: SummaryModel):
        self.summary = summary
        self.doc = summary_json(summary)

    @property
    def metadata(self) -> dict[str, Any]:
        """The profile's metadata as profile_metadata.json has it (GPU, ROCm, command, timing source)."""
        return self.doc["metadata"]

    def kernels(self):
        """The kernel table (as `Trace.kernels()`)."""
        from rocm_perf.api.trace import KERNEL_COLUMNS

        return frame(self.doc["kernels"], KERNEL_COLUMNS)

    def to_dict(self) -> dict[str, Any]:
        return self.doc

    def __repr__(self) -> str:
        return f"<Summary of {len(self.doc['kernels'])} kernels, {self.doc['dispatches']} dispatches>"


def summary(profile: Profile, *, by_phase: bool = False, expect_arch: str | None = None, top: int | None = 20,
            fold_range_numbers: bool = True) -> Summary:
    """The kernel table of a profile with its metadata and sections (as `rocm-perf summary`).

    `by_phase` adds a kernel table per roctx range or PyTorch annotation (`top` rows each;
    `fold_range_numbers` folds `step 12`, `step 13`, ... into one phase); `expect_arch` names the
    GPU meant (the metadata warns when the profile's differs).

    Examples:
        >>> import rocm_perf as rp
        >>> s = rp.summary("tests/data/rocpd_v3_multistream.db")
        >>> s.to_dict()["runtime_ns"], s.to_dict()["dispatches"], s.kernels().short_name.tolist()[0]
        (810000, 15, 'produce_kernel')
    """
    if top is not None and top < 1:
        raise RocmPerfError(f"summary: top {top}: expected a positive number")
    return Summary(build_summary(_with_dispatches(profile), expect_arch=expect_arch, by_phase=by_phase, top=top,
                                 fold_range_numbers=fold_range_numbers))


class CriticalPath:
    """The critical path of a trace's dispatch DAG: `length_ns`, the kernels weighed by their time
    on it (`kernels()`), and `to_dict()` = `rocm-perf critical-path --json`. `result` is the
    analysis' own record (per-dispatch slack, the path's rows, the DAG's edges)."""

    def __init__(self, result: CriticalPathResult, trace: Trace):
        self.result, self.trace = result, trace

    @property
    def length_ns(self) -> int:
        """The longest chain of dependent dispatches, in ns of kernel time."""
        return self.result.critical_path_ns

    @property
    def cross_stream_known(self) -> bool:
        """False when the profile had no API trace: streams were taken as independent, and the
        length is a lower bound."""
        return self.result.cross_stream_known

    def kernels(self):
        """One row per kernel, by critical-path time: `name`, `short_name`, `cp_ns` (its
        dispatches' time on the path), `cp_share` (of the path), `calls_on_path`,
        `calls_off_path`, `total_ns`, `total_slack_ns` (how much its dispatches could grow
        without lengthening the path)."""
        columns = ["name", "short_name", "cp_ns", "cp_share", "calls_on_path", "calls_off_path", "total_ns",
                   "total_slack_ns"]
        return frame([dict(s.to_json(), short_name=short_name(s.name)) for s in self.result.symbols], columns)

    def to_dict(self) -> dict[str, Any]:
        return result_json(self.result, self.trace)

    def __repr__(self) -> str:
        return f"<CriticalPath {self.length_ns} ns over {len(self.result.path)} dispatches>"


def critical_path(profile: Profile, *, null_stream: str = "legacy", gap_heuristic_us: float | None = None) -> CriticalPath:
    """The critical path of a profile's dispatch DAG (as `rocm-perf critical-path`).

    `null_stream="per-thread"` makes the default stream an ordinary one; `gap_heuristic_us` guesses
    dependencies from timing gaps (off by default: it invents edges).

    Examples:
        >>> import rocm_perf as rp
        >>> cp = rp.critical_path("tests/data/rocpd_v3_multistream.db")
        >>> cp.length_ns, cp.cross_stream_known
        (660000, True)
        >>> cp.kernels()[["short_name", "cp_ns"]].values.tolist()[:3]
        [['produce_kernel', 300000], ['consume_kernel', 240000], ['reduce_kernel', 120000]]
        >>> cp.to_dict()["critical_path_ns"]
        660000
    """
    trace = _with_dispatches(profile)
    gap_ns = None if gap_heuristic_us is None else int(round(gap_heuristic_us * 1000))
    return CriticalPath(analyze_critical_path(trace, null_stream=null_stream, gap_heuristic_ns=gap_ns), trace)


class Comparison:
    """Two profiles compared kernel by kernel: `to_dict()` = compare.json; `kernels()` the table;
    `differences` what differs between the two machines and runs (the comparability check);
    `comparison` the analysis' own record."""

    def __init__(self, doc: dict[str, Any], comparison: ComparisonModel, differences: list):
        self.doc, self.comparison, self.differences = doc, comparison, differences

    @property
    def total(self) -> dict[str, Any]:
        """The total GPU time of A and B: `a_ns`, `b_ns`, `delta_ns`, `ratio`."""
        return self.doc["total"]

    def kernels(self):
        """One row per kernel: `name`, `status` (faster, slower, same, new, missing), `a_calls`,
        `b_calls`, `a_total_ns`, `b_total_ns`, `delta_ns`, `ratio`, `a_median_ns`,
        `b_median_ns`, `median_ratio`, `p_value`, `p_holm` (family-wise over all kernels),
        `significant`."""
        columns = ["name", "status", "a_calls", "b_calls", "a_total_ns", "b_total_ns", "delta_ns", "ratio",
                   "a_median_ns", "b_median_ns", "median_ratio", "p_value", "p_holm", "significant"]
        return frame(self.doc["kernels"], columns)

    def to_dict(self) -> dict[str, Any]:
        return self.doc

    def __repr__(self) -> str:
        t = self.total
        return f"<Comparison {t['a_ns']} ns -> {t['b_ns']} ns over {len(self.doc['kernels'])} kernels>"


def compare(a: Profile, b: Profile, *, alpha: float = DEFAULT_ALPHA, min_change: float = DEFAULT_MIN_CHANGE,
            strict: bool = False, meta_a: dict[str, str] | None = None, meta_b: dict[str, str] | None = None) -> Comparison:
    """Two profiles of the same workload, of any formats, kernel by kernel (as `rocm-perf compare`):
    a kernel is `faster`/`slower` only when the Mann-Whitney test rejects at `alpha` over all
    kernels (Holm) and its median moved by at least `min_change` (a fraction: 0.02 is 2 %).

    Examples:
        >>> import rocm_perf as rp
        >>> c = rp.compare("tests/data/rocpd_v3_multistream.db", "tests/data/rocpd_v3_multistream.db")
        >>> sorted(set(c.kernels().status)), c.total["a_ns"] == c.total["b_ns"]
        (['same'], True)
    """
    trace_a, trace_b = trace_of(a), trace_of(b)
    name_a = str(a) if not isinstance(a, TraceModel) else str(trace_a.metadata.get("source_path", "A"))
    name_b = str(b) if not isinstance(b, TraceModel) else str(trace_b.metadata.get("source_path", "B"))
    doc, comparison, diffs = compare_document(trace_a, trace_b, name_a, name_b, strict=strict, meta_a=meta_a,
                                              meta_b=meta_b, alpha=alpha, min_change_pct=min_change * 100)
    return Comparison(doc, comparison, diffs)


class Analysis:
    """The roofline analysis of a profile's counters: `to_dict()` = analysis.json; `kernels()` the
    table; `devices` each GPU's figures and peaks with their sources; `analysis` its own record."""

    def __init__(self, analysis: AnalysisModel):
        self.analysis = analysis
        self.doc = analysis.to_json()

    @property
    def devices(self) -> list[dict[str, Any]]:
        return self.doc["devices"]

    @property
    def missing_counters(self) -> list[str]:
        """Counters the roofline needs that the profile lacks."""
        return list(self.doc.get("missing_counters") or [])

    def kernels(self):
        """One row per kernel: `name`, `dispatches`, `duration_ns`, `bound` (the memory level or
        compute pipe that bounds it, or latency), `pct_of_peak` (of its busiest resource),
        `headroom` (1 - the roof's time / its time), `max_speedup` (1 / (1 - headroom)),
        `limited_by` (the roof), `intensity` (FLOPs per HBM byte), `findings` (the rules that
        fired); None where the profile lacks the counters."""
        rows = []
        for k in self.doc["kernels"]:
            bound, headroom = k.get("bound") or {}, k.get("headroom") or {}
            rows.append({"name": k["name"], "dispatches": k.get("dispatches"), "duration_ns": k.get("duration_ns"),
                         "bound": bound.get("label"), "pct_of_peak": bound.get("pct_of_peak"),
                         "headroom": headroom.get("fraction"), "max_speedup": headroom.get("speedup"),
                         "limited_by": headroom.get("limited_by"), "intensity": (k.get("intensity") or {}).get("hbm"),
                         "findings": [f.get("rule") for f in k.get("findings") or []]})
        return frame(rows, ["name", "dispatches", "duration_ns", "bound", "pct_of_peak", "headroom", "max_speedup",
                            "limited_by", "intensity", "findings"])

    def to_dict(self) -> dict[str, Any]:
        return self.doc

    def __repr__(self) -> str:
        return f"<Analysis of {len(self.doc['kernels'])} kernels on {[d['arch'] for d in self.devices]}>"


def analyze(profile: Profile, *, kernel: str | None = None, arch: str | None = None, peaks: Union[str, Path, None] = None,
            source: Union[str, Path, None] = None, cflags: str = "") -> Analysis:
    """Per kernel: where it sits on the roofline, what bounds it and the headroom left (as
    `rocm-perf analyze`). `kernel` is a regular expression; `arch` names the GPU where the profile
    does not; `peaks` a JSON/TOML file of measured peaks or a rocprof-compute roofline.csv;
    `source` the program, for the compiler's own occupancy figures.

    Examples:
        >>> import rocm_perf as rp
        >>> a = rp.analyze("tests/data/rocprof-compute/MI300X_vcopy")
        >>> a.devices[0]["arch"], a.devices[0]["cu_count"]
        ('gfx942', 304)
        >>> a.kernels()[["bound", "limited_by"]].values.tolist()
        [['latency', 'hbm']]
    """
    trace = trace_of(profile)
    user_peaks, user_from = read_peaks(Path(peaks)) if peaks else (None, "")
    resources = None
    if source:
        check_arch = arch or next((a.name for a in trace.gpu_agents() if a.name), None) or "gfx90a"
        resources = compile_resources(Path(source), check_arch, cflags)
    return Analysis(analyze_trace(trace, arch=arch, kernel_regex=kernel, user_peaks=user_peaks,
                                  user_peaks_from=user_from, resources=resources))


class Triage:
    """One compact answer about a profile: `to_dict()` = `rocm-perf triage --json`; `kernels()`,
    `overlap()`, `fuse()` and `idle_gaps()` the tables; `triage` its own record."""

    def __init__(self, triage: TriageModel):
        self.triage = triage
        self.doc = triage_document(triage)

    def kernels(self):
        """The kernel table (as `Trace.kernels()`)."""
        from rocm_perf.api.trace import KERNEL_COLUMNS

        return frame(self.doc["kernel_table"]["kernels"], KERNEL_COLUMNS)

    def overlap(self):
        """Per kernel: `name`, `category`, `total_ns`, `exposed_ns` (nothing else running on its
        GPU), `hidden_ns` (behind other streams' work), `critical_path_ns`."""
        rows = self.doc["overlap_opportunities"]["kernels"]
        return frame(rows, list(rows[0]) if rows else ["name", "category", "total_ns", "exposed_ns", "hidden_ns"])

    def fuse(self):
        """Sequences of short kernels launched back to back again and again, with what fusing
        them would save (one row per pattern)."""
        rows = self.doc["fuse_opportunities"]["patterns"]
        return frame(rows, list(rows[0]) if rows else ["kernels", "occurrences"])

    def idle_gaps(self):
        """Per GPU: idle time and what caused it (host synchronization, memcpy, launch latency, host busy)."""
        rows = self.doc["overlap_opportunities"]["idle_gaps"]
        return frame(rows, list(rows[0]) if rows else ["agent"])

    def to_dict(self) -> dict[str, Any]:
        return self.doc

    def __repr__(self) -> str:
        return f"<Triage of {len(self.doc['kernel_table']['kernels'])} kernels>"


def triage(profile: Profile, *, short_us: float = DEFAULT_SHORT_NS / 1000, max_gap_us: float = DEFAULT_MAX_GAP_NS / 1000,
           top: int = 10) -> Triage:
    """Where the time is, what overlaps, what could be fused (as `rocm-perf triage`).

    Examples:
        >>> import rocm_perf as rp
        >>> t = rp.triage("tests/data/torch-trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz")
        >>> len(t.kernels()), t.to_dict()["kernel_table"]["dispatches"]
        (12, 14)
    """
    if short_us <= 0 or max_gap_us < 0 or top < 1:
        raise RocmPerfError("triage: short_us must be positive, max_gap_us not negative and top at least 1")
    trace = _with_dispatches(profile)
    return Triage(triage_trace(trace, short_ns=int(short_us * 1000), max_gap_ns=int(max_gap_us * 1000), top=top))


class Hotspots:
    """Where in the kernels the time goes: `to_dict()` = hotspots.json; `lines()` and `loops()`
    the tables over every kernel; `sourced` its own record."""

    def __init__(self, sourced, top: int | None = None):
        self.sourced = sourced
        self.doc = hotspots_document(sourced, top=top)

    def lines(self):
        """One row per source line with samples: `kernel`, `file`, `line`, `loop` (the innermost
        loop holding it, as `rocm-perf loops` names it), `samples`, `share` (of its kernel),
        `top_stall`, `stalls` (by reason)."""
        rows = [dict(line, kernel=k["kernel"]) for k in self.doc["kernels"] for line in k["lines"]]
        return frame(rows, ["kernel", "file", "line", "loop", "samples", "share", "top_stall", "stalls"])

    def loops(self):
        """One row per loop of the kernels whose source was found: `kernel`, `id`, `file`, `line`,
        `end_line`, `samples`, `share`, `inclusive_share` (with the loops nested in it), `top_stall`."""
        rows = [dict(loop, kernel=k["kernel"]) for k in self.doc["kernels"] for loop in (k["loops"] or [])]
        return frame(rows, ["kernel", "id", "file", "line", "end_line", "samples", "share", "inclusive_share", "top_stall"])

    def to_dict(self) -> dict[str, Any]:
        return self.doc

    def __repr__(self) -> str:
        return f"<Hotspots ({self.doc['evidence']}) of {len(self.doc['kernels'])} kernels>"


def hotspots(profile: Union[str, Path], *, source: Union[str, Path, None] = None, kernel: str | None = None,
             cflags: str = "", top: int | None = None) -> Hotspots:
    """Hot loops, lines and stall reasons from instruction-level evidence (PC sampling, thread
    trace, the host sampler; as `rocm-perf hotspots`). `source` maps recorded paths to your files;
    `top` keeps that many lines and loops per kernel (as `--top`; None: all of them).

    Examples:
        >>> import rocm_perf as rp
        >>> h = rp.hotspots("tests/data/pc-sampling")
        >>> h.to_dict()["evidence"], h.lines().line.tolist()[:3]
        ('pc-sampling', [552, 561, 644])
    """
    if top is not None and top < 1:
        raise RocmPerfError(f"hotspots: top {top}: expected a positive number")
    return Hotspots(build_hotspots(Path(profile), source=Path(source) if source else None, cflags=cflags, kernel=kernel),
                    top=top)
