"""Building a reproducer's replay harness (rocm_perf/reproducer.py) with a backend, around its own
kernel file or a candidate's: the program that `profile DIR`, `optimize DIR` and `sweep` measure.

The build's unit includes the kernel file first and then the reproducer's harness.hip, with
ROCM_PERF_REPLAY_KERNEL_INCLUDED defined so the harness does not include its own copy: a candidate
is built from its own file wherever it lies, the kernel's headers found through the reproducer.
"""

from __future__ import annotations

from pathlib import Path

from rocm_perf.backends.base import Backend, Program
from rocm_perf.reproducer import Reproducer

UNIT_NAME = "replay.hip"


def replay_unit(reproducer: Reproducer, kernel_file: Path | None = None) -> str:
    """The text of the unit that builds the harness around `kernel_file` (default: the reproducer's)."""
    kernel = Path(kernel_file or reproducer.kernel_file).resolve()
    return (f'#include "{kernel}"\n'
            "#define ROCM_PERF_REPLAY_KERNEL_INCLUDED 1\n"
            f'#include "{reproducer.harness}"\n')


def replay_flags(reproducer: Reproducer) -> list[str]:
    """The reproducer's build flags (the original's -D/-std) and -I for its kernel's headers."""
    return reproducer.cflags() + reproducer.include_flags()


def build_replay(backend: Backend, reproducer: Reproducer, out_dir: Path, *, kernel_file: Path | None = None,
                 flags: list[str] | None = None, timeout: float = 600) -> Program:
    """The harness built into `out_dir` (RocmPerfError with the compiler's first errors)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    unit = out_dir / UNIT_NAME
    unit.write_text(replay_unit(reproducer, kernel_file), encoding="utf-8")
    return backend.build(unit, out_dir, replay_flags(reproducer) + list(flags or []), timeout=timeout)
