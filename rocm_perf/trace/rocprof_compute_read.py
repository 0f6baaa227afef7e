"""Read a rocprof-compute (formerly Omniperf) workload folder into a Trace with counters.

The folder holds `pmc_perf.csv` (wide: one row per dispatch, the dispatch's own columns beside a
column per counter; `NAME_sum` columns are already summed over a block's instances, `NAME[i]`
columns are per instance), `sysinfo.csv` (one row describing the GPU: arch, CUs, clocks, channels),
optionally `roofline.csv` (peaks its roofline benchmark measured, one row per device, GB/s and
GFLOP/s) and `timestamps.csv` (a separate timing run). Column facts: FORMATS.md "Where counters
come from"; the fixtures tests/data/rocprof-compute/ are real workloads from rocprofiler-compute's
own test suite.
"""

from __future__ import annotations

import csv
import math
import re
import statistics
from pathlib import Path

import numpy as np

from rocm_perf.errors import RocmPerfError
from rocm_perf.trace import foreign
from rocm_perf.trace.model import Agent, KernelSymbol, Trace

PMC_PERF = "pmc_perf.csv"

# Hardware blocks whose counters rocprof-compute writes as columns (rocprofv3 counter prefixes).
_COUNTER = re.compile(r"^(?:SQ|SQC|TA|TD|TCP|TCC|TCA|SPI|CPC|CPF|GRBM|GRBMH|GDS|RLC|SDMA|UTCL2|GCEA|MALL)_[A-Z0-9_]+?(?:_sum)?$")
_INSTANCE = re.compile(r"^(?P<name>[A-Z][A-Z0-9_]+)\[(?P<index>\d+)\]$")
# Kernel names carry the code object's descriptor suffix: "vecCopy(...) [clone .kd]" (ROCm 6.0),
# "vecCopy(...) (.kd)" (ROCm 6.2).
_KD_SUFFIX = re.compile(r"\s*(?:\[clone \.kd\]|\(\.kd\))\s*$")

# sysinfo.csv column -> Agent.extra key (model.py's spelling), and its type
_SYSINFO = {
    "max_sclk": ("max_engine_clk_fcompute", float),
    "max_mclk": ("max_mem_clk_mhz", float),
    "total_l2_chan": ("l2_channels", int),
    "num_hbm_channels": ("hbm_channels", int),
    "lds_banks_per_cu": ("lds_banks_per_cu", int),
    "simd_per_cu": ("simd_per_cu", int),
    "max_waves_per_cu": ("max_waves_per_cu", int),
    "wave_size": ("wave_front_size", int),
    "hbm_bw": ("hbm_bandwidth_gbs", float),
    "num_xcd": ("num_xcc", int),
    "se_per_gpu": ("shader_engines", int),
    "gpu_l2": ("l2_kb", float),
}
# roofline.csv column -> measured peak key, and the factor to bytes/s or FLOP/s (file: GB/s, GFLOP/s)
_ROOFLINE = {
    "HBMBw": "hbm", "L2Bw": "l2", "L1Bw": "vl1d", "LDSBw": "lds",
    "FP32Flops": "valu_f32", "FP64Flops": "valu_f64",
    "MFMAF16Flops": "mfma_f16", "MFMABF16Flops": "mfma_bf16", "MFMAF32Flops": "mfma_f32",
    "MFMAF64Flops": "mfma_f64", "MFMAF8Flops": "mfma_f8", "MFMAF6F4Flops": "mfma_f6f4", "MFMAI8Ops": "mfma_i8",
}


def is_rocprof_compute_workload(folder: Path) -> bool:
    return (Path(folder) / PMC_PERF).is_file()


def _read_csv(path: Path) -> tuple[list[str], list[list[str]]]:
    try:
        with open(path, newline="", encoding="utf-8", errors="replace") as f:
            rows = [r for r in csv.reader(f) if r]
    except OSError as e:
        raise RocmPerfError(f"{path}: cannot read ({e.strerror or e})") from e
    except csv.Error as e:
        raise RocmPerfError(f"{path}: not a readable CSV ({e})") from e
    if not rows:
        raise RocmPerfError(f"{path}: empty file")
    header = rows[0]
    for line, r in enumerate(rows[1:], start=2):
        if len(r) != len(header):
            raise RocmPerfError(f"{path}: line {line}: {len(r)} fields where the header has {len(header)} (truncated or damaged CSV)")
    return header, rows[1:]


def _number(path: Path, line: int, column: str, text: str) -> float:
    text = text.strip()
    if text == "" or text.lower() in ("nan", "none"):
        return math.nan
    return foreign.finite(text, f"{path}: line {line}: column {column}")


def read_rocprof_compute(folder: Path) -> Trace:
    """A Trace (dispatches, counters, the GPU from sysinfo.csv, measured peaks from roofline.csv)
    from a rocprof-compute workload folder."""
    folder = Path(folder)
    path = folder / PMC_PERF
    header, rows = _read_csv(path)
    if not rows:
        raise RocmPerfError(f"{path}: no dispatch rows")
    col = {name: i for i, name in reversed(list(enumerate(header)))}  # first occurrence wins

    def column(*names: str, default: float = math.nan) -> np.ndarray:
        for name in names:
            if name in col:
                i = col[name]
                return np.array([_number(path, n, name, r[i]) for n, r in enumerate(rows, start=2)])
        return np.full(len(rows), default)

    for needed in ("Kernel_Name",):
        if needed not in col:
            raise RocmPerfError(f"{path}: no {needed} column (not a rocprof-compute pmc_perf.csv)")
    start, end = column("Start_Timestamp"), column("End_Timestamp")
    times_from = path
    if np.isnan(start).all() or np.isnan(end).all():
        start, end = _timestamps(folder, column("Dispatch_ID"), path)
        times_from = folder / "timestamps.csv"
    bad = np.flatnonzero(np.isnan(start) | np.isnan(end))
    if len(bad):
        raise RocmPerfError(f"{path}: line {int(bad[0]) + 2}: dispatch without Start_Timestamp/End_Timestamp")

    counters = _counters(path, header, rows)
    symbols, kernel = _symbols(rows, col, column, path)

    def ints(*names: str, default: int) -> np.ndarray:
        """Whole-number columns (NaN where a cell is empty: `default` then)."""
        return foreign.whole_floats(column(*names, default=default),
                                    lambda i: f"{path}: line {i + 2}: column {names[0]}", missing=default)

    gpu = ints("GPU_ID", default=0)
    ones = np.ones(len(rows), dtype=np.int64)
    trace = Trace.from_rows(
        start=foreign.whole_floats(start, lambda i: f"{times_from}: Start_Timestamp of the dispatch on line {i + 2}"),
        end=foreign.whole_floats(end, lambda i: f"{times_from}: End_Timestamp of the dispatch on line {i + 2}"),
        kernel=kernel,
        symbols=symbols,
        agent=gpu,
        queue=ints("Queue_ID", "queue-id", default=-1),
        corr=ints("Dispatch_ID", default=-1),
        grid=np.stack([ints("Grid_Size", default=1), ones, ones], axis=1),
        workgroup=np.stack([ints("Workgroup_Size", default=1), ones, ones], axis=1),
        lds_bytes=ints("LDS_Per_Workgroup", default=0),
        counters=counters,
        agents=_agents(folder, sorted(set(gpu.tolist()))),
    )
    sysinfo = _sysinfo(folder)
    trace.metadata.update(
        format="rocprof-compute",
        source_path=str(folder),
        hostname=sysinfo.get("hostname"),
        command=sysinfo.get("command"),
        pid=int(ints("PID", "pid", default=-1)[0]) if not math.isnan(column("PID", "pid")[0]) else None,
        api_trace=False,
        workload=sysinfo.get("workload_name"),
        rocm_version=sysinfo.get("rocm_version"),
        timing="pmc_perf.csv Start/End_Timestamp (the counter passes' own)",
    )
    return trace


def _timestamps(folder: Path, dispatch_ids: np.ndarray, pmc_path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Start/End from timestamps.csv, matched by Dispatch_ID, for a pmc_perf.csv without them."""
    path = folder / "timestamps.csv"
    if not path.is_file():
        raise RocmPerfError(f"{pmc_path}: no Start_Timestamp/End_Timestamp columns and no timestamps.csv beside it")
    header, rows = _read_csv(path)
    try:
        i, s, e = header.index("Dispatch_ID"), header.index("Start_Timestamp"), header.index("End_Timestamp")
    except ValueError:
        raise RocmPerfError(f"{path}: expected Dispatch_ID, Start_Timestamp and End_Timestamp columns") from None
    times = {foreign.integer(r[i], f"{path}: line {n}: Dispatch_ID"):
             (foreign.finite(r[s], f"{path}: line {n}: Start_Timestamp"), foreign.finite(r[e], f"{path}: line {n}: End_Timestamp"))
             for n, r in enumerate(rows, start=2)}
    pairs = [times.get(int(d), (math.nan, math.nan)) if math.isfinite(d) and d == int(d) else (math.nan, math.nan)
             for d in dispatch_ids]
    return np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])


def _counters(path: Path, header: list[str], rows: list[list[str]]) -> dict[str, np.ndarray]:
    """Counter columns; per-instance `NAME[i]` columns are summed into `NAME_sum` where the file has no such column."""
    counters: dict[str, np.ndarray] = {}
    instances: dict[str, list[int]] = {}
    for i, name in enumerate(header):
        if name in counters:
            continue
        if _COUNTER.match(name):
            counters[name] = np.array([_number(path, n, name, r[i]) for n, r in enumerate(rows, start=2)])
        elif m := _INSTANCE.match(name):
            instances.setdefault(m.group("name"), []).append(i)
    for name, columns in instances.items():
        total = f"{name}_sum"
        if total not in counters:
            counters[total] = np.array(
                [sum(_number(path, n, header[i], r[i]) for i in columns) for n, r in enumerate(rows, start=2)]
            )
    return counters


def _symbols(rows: list[list[str]], col: dict[str, int], column, path: Path) -> tuple[list[KernelSymbol], np.ndarray]:
    names = [r[col["Kernel_Name"]] for r in rows]
    resource_columns = ("Arch_VGPR", "Accum_VGPR", "SGPR", "LDS_Per_Workgroup", "Scratch_Per_Workitem")
    values = [column(c) for c in resource_columns]

    def opt(value: float, line: int, name: str) -> int | None:
        return None if math.isnan(value) else foreign.integer(value, f"{path}: line {line}: column {name}", low=0)

    symbols: list[KernelSymbol] = []
    index: dict[tuple, int] = {}
    kernel = np.zeros(len(rows), dtype=np.int32)
    for i, name in enumerate(names):
        resources = tuple(opt(v[i], i + 2, c) for v, c in zip(values, resource_columns))
        key = (name, *resources)
        if key not in index:
            index[key] = len(symbols)
            symbols.append(KernelSymbol(name, _KD_SUFFIX.sub("", name), *resources))
        kernel[i] = index[key]
    return symbols, kernel


def _sysinfo(folder: Path) -> dict[str, str]:
    path = folder / "sysinfo.csv"
    if not path.is_file():
        return {}
    header, rows = _read_csv(path)
    return dict(zip(header, rows[0])) if rows else {}


def _agents(folder: Path, gpu_ids: list[int]) -> list[Agent]:
    """One Agent per GPU the dispatches ran on, all described by sysinfo.csv (it describes one GPU model)."""
    info = _sysinfo(folder)
    extra: dict = {}
    where = f"{folder / 'sysinfo.csv'}: line 2"
    for column, (key, kind) in _SYSINFO.items():
        text = (info.get(column) or "").strip()
        if text:
            number = foreign.finite(text, f"{where}: column {column}")
            extra[key] = foreign.integer(number, f"{where}: column {column}") if kind is int else number
    cu = info.get("cu_per_gpu", "").strip()
    roofline = folder / "roofline.csv"
    peaks_by_device = read_roofline_csv(roofline) if roofline.is_file() else {}
    agents = []
    for gpu in gpu_ids:
        peaks, how = peaks_for(peaks_by_device, gpu)
        agent_extra = dict(extra)
        if how:
            agent_extra["measured_peaks_from"] = how
        agents.append(
            Agent(
                id=gpu,
                type="GPU",
                name=(info.get("gpu_arch") or "").strip(),
                product=(info.get("gpu_model") or "").strip(),
                cu_count=foreign.integer(foreign.finite(cu, f"{where}: column cu_per_gpu"), f"{where}: column cu_per_gpu",
                                         low=0) or None if cu else None,
                extra=agent_extra,
                measured_peaks=peaks,
            )
        )
    return agents


def is_roofline_csv(path: Path) -> bool:
    try:
        with open(path, newline="", encoding="utf-8", errors="replace") as f:
            header = next(csv.reader(f), [])
    except OSError:
        return False
    return "HBMBw" in header


def read_roofline_csv(path: Path) -> dict[int, dict[str, float]]:
    """Measured peaks per device from a rocprof-compute roofline.csv (converted to bytes/s, FLOP/s)."""
    header, rows = _read_csv(path)
    if "HBMBw" not in header:
        raise RocmPerfError(f"{path}: not a rocprof-compute roofline.csv (no HBMBw column)")
    out: dict[int, dict[str, float]] = {}
    for line, r in enumerate(rows, start=2):
        cells = dict(zip(header, r))
        device = foreign.integer(foreign.finite(cells["device"], f"{path}: line {line}: column device"),
                                 f"{path}: line {line}: column device") if cells.get("device", "").strip() else line - 2
        peaks = {}
        for column, key in _ROOFLINE.items():
            if column in cells:
                value = _number(path, line, column, cells[column])
                if math.isfinite(value) and value > 0:
                    peaks[key] = value * 1e9
        out[device] = peaks
    return out


def peaks_for(by_device: dict[int, dict[str, float]], gpu: int) -> tuple[dict[str, float], str]:
    """The measured peaks of this GPU's device row, else the median over the devices measured."""
    if not by_device:
        return {}, ""
    if gpu in by_device:
        return dict(by_device[gpu]), f"roofline.csv device {gpu}"
    keys = sorted({k for peaks in by_device.values() for k in peaks})
    median = {k: statistics.median(p[k] for p in by_device.values() if k in p) for k in keys}
    return median, f"roofline.csv, median of {len(by_device)} devices (none is numbered {gpu})"
