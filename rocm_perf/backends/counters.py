"""Hardware counters through rocprofv3: a counter set split into passes by per-block limits
(analysis/pass_plan.py), run through an input file, and `counter_collection` read back.

rocprofv3 replays the program once per pass and writes pass n into `pmc_<n>/` below the output
directory (trace/counter_passes.py reads and joins them).
"""

from __future__ import annotations

import csv
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from rocm_perf.analysis.pass_plan import BLOCK_LIMITS, UNKNOWN_BLOCK_LIMIT, counter_block, plan_passes  # noqa: F401 (re-exported)
from rocm_perf.backends.rocprofv3 import run_rocprofv3
from rocm_perf.errors import RocmPerfError


@dataclass
class CounterSample:
    """One row of counter_collection: one counter's value for one dispatch."""

    pass_index: int
    dispatch_id: int
    kernel: str
    counter: str
    value: float


@dataclass
class CounterCollection:
    passes: list[list[str]]
    samples: list[CounterSample] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    output_dir: Path | None = None  # the folder holding the pmc_N pass folders

    def per_kernel(self) -> dict[str, dict[str, float]]:
        """Kernel name -> counter -> sum over its dispatches."""
        totals: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        for s in self.samples:
            totals[s.kernel][s.counter] += s.value
        return {k: dict(v) for k, v in totals.items()}

    def missing(self) -> list[str]:
        """Requested counters that no row came back for."""
        seen = {s.counter for s in self.samples}
        return [c for p in self.passes for c in p if c not in seen]


def write_input_file(passes: list[list[str]], path: Path) -> Path:
    """rocprofv3's text input file: one `pmc:` row per pass."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"pmc: {' '.join(p)}\n" for p in passes))
    return path


def read_counter_collection(output_dir: Path) -> tuple[list[CounterSample], list[Path]]:
    """Every `*counter_collection.csv` below `output_dir` (pass_N/ or pmc_N/ folders, any host/pid layout)."""
    files = find_counter_files(output_dir)
    samples = []
    for path in files:
        pass_index = _pass_index(path, output_dir)
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                try:
                    samples.append(
                        CounterSample(
                            pass_index=pass_index,
                            dispatch_id=int(row["Dispatch_Id"]),
                            kernel=row["Kernel_Name"],
                            counter=row["Counter_Name"],
                            value=float(row["Counter_Value"]),
                        )
                    )
                except (KeyError, ValueError) as e:
                    raise RocmPerfError(f"{path}: not a rocprofv3 counter_collection.csv ({e})") from e
    return samples, files


def find_counter_files(output_dir: Path) -> list[Path]:
    return sorted(p for p in Path(output_dir).rglob("*counter_collection.csv") if p.is_file())


def collect_counters(
    argv: list[str],
    counters: list[str],
    out_dir: Path,
    *,
    timeout: float = 600,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    attempts: int = 3,
    retry_wait_s: float = 2.0,
) -> CounterCollection:
    """Run `argv` under rocprofv3 once per pass and read every counter back."""
    passes = plan_passes(counters)
    if not passes:
        raise RocmPerfError("no counters asked for")
    out_dir = Path(out_dir)
    input_file = write_input_file(passes, out_dir / "counters.txt")
    run = run_rocprofv3(
        ["-i", str(input_file), "--output-format", "csv"],
        argv,
        out_dir,
        find_outputs=find_counter_files,
        timeout=timeout,
        cwd=cwd,
        env=env,
        attempts=attempts,
        retry_wait_s=retry_wait_s,
        log=out_dir / "counters.log",
    )
    if run.completed.timed_out:
        raise RocmPerfError(f"counter collection timed out after {timeout:g} s running {argv[0]} (log: {out_dir / 'counters.log'})")
    samples, files = read_counter_collection(run.output_dir)
    return CounterCollection(passes=passes, samples=samples, files=files, output_dir=run.output_dir)


def _pass_index(path: Path, root: Path) -> int:
    for part in path.relative_to(root).parts:
        for prefix in ("pass_", "pmc_"):
            if part.startswith(prefix) and part[len(prefix) :].isdigit():
                return int(part[len(prefix) :])
    return 1
