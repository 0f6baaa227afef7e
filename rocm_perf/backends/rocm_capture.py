"""The rocm backend's capture of one dispatch (`rocm-perf isolate --backend rocm`): the interposer
library (rocm_interposer/, package data) built with hipcc and preloaded into the program, and what
rocprofv3 itself offers for replaying a dispatch.

The interposer has NEVER RUN ON A GPU (rocm-perf's development machines have none): it builds with
Debian's hipcc in the tests, and its GPU-free parts (capture_core.h) run there with g++.
"""

from __future__ import annotations

from pathlib import Path

from rocm_perf.backends.hipcc import amd_build_env, find_hipcc
from rocm_perf.backends.rocprofv3 import find_rocprofv3
from rocm_perf.errors import RocmPerfError
from rocm_perf.process import run

INTERPOSER_DIR = Path(__file__).resolve().parent / "rocm_interposer"
INTERPOSER_SOURCE = INTERPOSER_DIR / "interposer.cpp"
LIBRARY_NAME = "librocm_perf_capture.so"
# The interposer has no device code; hipcc still wants a target for the (empty) device side.
BUILD_ARCH = "gfx90a"
# rocprofiler-sdk documents kernel replay as `rocprofv3 --replay-mode kernel --kernel-replay-beta-enabled`
# (experimental): https://rocm.docs.amd.com/projects/rocprofiler-sdk/en/develop/how-to/using-kernel-replay-rocprofv3.html
REPLAY_DOCS = "https://rocm.docs.amd.com/projects/rocprofiler-sdk/en/develop/how-to/using-kernel-replay-rocprofv3.html"


def interposer_command(out: Path, hipcc: str) -> list[str]:
    """The hipcc command that builds the interposer into `out`."""
    return [hipcc, "-std=c++17", f"--offload-arch={BUILD_ARCH}", "-fPIC", "-shared", "-O2", "-I", str(INTERPOSER_DIR),
            str(INTERPOSER_SOURCE), "-o", str(out), "-ldl"]


def build_interposer(out_dir: Path, *, timeout: float = 600) -> Path:
    """The interposer library built with hipcc into `out_dir` (RocmPerfError with hipcc's first error)."""
    hipcc = find_hipcc()
    if hipcc is None:
        raise RocmPerfError("the rocm backend's capture needs hipcc to build its interposer library (`rocm-perf doctor`)")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    library = out_dir / LIBRARY_NAME
    with amd_build_env() as env:
        done = run(interposer_command(library, hipcc), timeout=timeout, env=env, log=out_dir / "interposer.build.log")
    if done.returncode != 0 or not library.is_file():
        first = next((l for l in done.stderr.splitlines() if "error" in l), done.stderr.strip()[-300:])
        raise RocmPerfError(f"the capture interposer does not build: {first} (log: {out_dir / 'interposer.build.log'})")
    return library


def parameter_sizes(layout: list[tuple[int, int]]) -> str:
    """ROCM_PERF_CAPTURE_ARG_SIZES for a kernel's parameters [(size, align), ...]: "8:8,4:4"."""
    for size, align in layout:
        if size <= 0 or align <= 0:
            raise RocmPerfError("the rocm backend's capture needs every parameter's size; a template kernel's depend "
                                "on its instance (not known before the run)")
    return ",".join(f"{size}:{align}" for size, align in layout)


def interposer_environment(library: Path, layout: list[tuple[int, int]]) -> dict[str, str]:
    """What the program runs with under the interposer (beside isolate's ROCM_PERF_CAPTURE_* variables)."""
    return {"LD_PRELOAD": str(Path(library).resolve()), "ROCM_PERF_CAPTURE_ARG_SIZES": parameter_sizes(layout)}


def replay_mode_status(rocprofv3: str | None = None) -> tuple[bool, str]:
    """(whether this rocprofv3 offers kernel replay, what was found): its --help lists --replay-mode."""
    path = rocprofv3 or find_rocprofv3()
    if path is None:
        return False, "no rocprofv3 here"
    try:
        done = run([path, "--help"], timeout=60)
    except OSError as e:
        return False, f"{path} --help did not run ({e})"
    text = done.stdout + done.stderr
    if "--replay-mode" not in text:
        return False, (f"{path} does not list --replay-mode (ROCm's rocprofiler-sdk documents "
                       f"`--replay-mode kernel --kernel-replay-beta-enabled`, experimental, in its develop docs)")
    beta = " with --kernel-replay-beta-enabled" if "--kernel-replay-beta-enabled" in text else ""
    return True, (f"{path} offers --replay-mode kernel{beta} (experimental: one replayed dispatch per --pmc group, "
                  f"memory restored between passes; {REPLAY_DOCS}); rocm-perf replays with its own harness")


def interposer_status() -> tuple[bool, str]:
    """Whether the interposer can be built here (hipcc present), said plainly that it never ran on a GPU."""
    if find_hipcc() is None:
        return False, "no hipcc: the rocm backend's capture interposer cannot be built"
    return True, f"builds with hipcc from {INTERPOSER_SOURCE.name} (preloaded; it has never run on a GPU)"
