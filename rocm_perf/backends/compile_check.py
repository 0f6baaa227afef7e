"""The AMD compile check: compile a source for a real AMD target and read each kernel's resources.

hipcc's `-Rpass-analysis=kernel-resource-usage` remarks give, per kernel, SGPRs, VGPRs, AGPRs,
scratch, occupancy, spills and LDS. Debian's hipcc (ROCm 5.2, clang 15) runs on machines with no
GPU, so this check runs in CI. Two remark layouts exist (plain, and `-save-temps`); both parse.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import shutil
import tempfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path

from rocm_perf import process
from rocm_perf.disk_space import check_space
from rocm_perf.backends.hipcc import amd_build_env, find_hipcc
from rocm_perf.clang_resources import ROCTX_DECLARATIONS
from rocm_perf.backends.compiler_output import first_errors
from rocm_perf.backends.isa import count_instructions
from rocm_perf.backends.demangle import demangle_all

REMARK_PASS = "kernel-resource-usage"

# Without -save-temps:  f.cu:7:1: remark: Function Name: _Z5saxpyPfPKffi [-Rpass-analysis=...]
# With -save-temps:     remark: f.cu:7:0: Function Name: _Z5saxpyPfPKffi [-Rpass-analysis=...]
_REMARK_LINE = re.compile(
    r"^(?:(?P<loc1>.+?:\d+:\d+): remark: |remark: (?P<loc2>.+?:\d+:\d+): )"
    r"(?P<body>.*?)\s*\[-Rpass-analysis=kernel-resource-usage\]\s*$"
)
_FIELD = re.compile(r"^\s*(?P<key>[^:]+?):\s*(?P<value>.*?)\s*$")

# remark key -> KernelResources field
_REMARK_KEYS = {
    "SGPRs": "sgpr",
    "VGPRs": "vgpr",
    "AGPRs": "agpr",
    "ScratchSize [bytes/lane]": "scratch_bytes",
    "Occupancy [waves/SIMD]": "occupancy",
    "SGPRs Spill": "sgpr_spill",
    "VGPRs Spill": "vgpr_spill",
    "LDS Size [bytes/block]": "lds_bytes",
}

# Targets newer than the installed compiler knows, and the nearest older ones to check instead.
# gfx94x/gfx950 (CDNA3/4) share gfx90a's (CDNA2) wave64, 512-entry unified VGPR/AGPR file and
# register granules, so register counts, spills and occupancy carry over; the ISA differs.
_NEAREST_KNOWN = {
    "gfx940": ("gfx90a",),
    "gfx941": ("gfx90a",),
    "gfx942": ("gfx90a",),
    "gfx950": ("gfx90a",),
    "gfx90a": ("gfx908",),
    "gfx908": ("gfx906",),
    "gfx1100": ("gfx1030",),
    "gfx1101": ("gfx1030",),
    "gfx1102": ("gfx1030",),
    "gfx1200": ("gfx1100", "gfx1030"),
    "gfx1201": ("gfx1100", "gfx1030"),
}
_FAMILY = {
    "gfx940": "CDNA3",
    "gfx941": "CDNA3",
    "gfx942": "CDNA3",
    "gfx950": "CDNA4",
    "gfx90a": "CDNA2",
    "gfx908": "CDNA1",
    "gfx906": "GCN5",
    "gfx1030": "RDNA2",
    "gfx1100": "RDNA3",
    "gfx1101": "RDNA3",
    "gfx1102": "RDNA3",
    "gfx1200": "RDNA4",
    "gfx1201": "RDNA4",
}


@dataclass
class KernelResources:
    """One kernel's resource usage as the compiler reports it (None: the remark did not say)."""

    mangled: str
    demangled: str
    sgpr: int | None = None
    vgpr: int | None = None
    agpr: int | None = None
    scratch_bytes: int | None = None  # per lane
    occupancy: int | None = None  # waves per SIMD, the compiler's own figure
    sgpr_spill: int | None = None
    vgpr_spill: int | None = None
    lds_bytes: int | None = None  # per block, static
    isa_instructions: int | None = None  # only when the ISA was kept


@dataclass
class CompileReport:
    """The outcome of compiling one source for one AMD target."""

    ok: bool
    arch: str  # the target actually compiled for
    requested_arch: str
    arch_match: str  # "exact" | "compatible" | "unknown" (no target the compiler knows fits)
    arch_reason: str
    errors: str  # the compiler's first errors ("" when ok)
    kernels: list[KernelResources] = field(default_factory=list)
    available: bool = True  # False: no hipcc targeting AMD here
    source: str = ""
    command: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    timed_out: bool = False
    isa_path: str | None = None  # the kept ISA (.s), when asked for and a workdir was given
    isa: str | None = None  # the ISA text, when asked for and no workdir was given

    def kernel(self, name: str) -> KernelResources | None:
        """The kernel whose mangled or demangled name is `name`, or whose demangled name starts with `name(`."""
        for k in self.kernels:
            if name in (k.mangled, k.demangled) or k.demangled.startswith(name + "(") or k.demangled.startswith(name + "<"):
                return k
        return None

    def to_json(self) -> dict:
        data = asdict(self)
        data.pop("isa")
        return data


def hipcc_available() -> tuple[bool, str]:
    """Whether a hipcc that targets AMD is installed, and which (or what to install)."""
    hipcc = find_hipcc()
    if hipcc is None:
        return False, "hipcc not found (install: sudo apt-get install -y hipcc libamdhip64-dev rocm-device-libs)"
    if not _target_known(hipcc, "gfx90a"):
        return False, f"{hipcc} cannot compile for AMD targets (install rocm-device-libs; set HIP_PLATFORM=amd)"
    return True, hipcc


def parse_resource_remarks(text: str) -> list[KernelResources]:
    """Kernels and their resources from hipcc's remark output, either layout, in order of appearance.

    Demangled names are left equal to the mangled ones; `compile_check` fills them in.
    """
    kernels: list[KernelResources] = []
    current: KernelResources | None = None
    for line in text.splitlines():
        m = _REMARK_LINE.match(line)
        if not m:
            continue
        fm = _FIELD.match(m.group("body"))
        if not fm:
            continue
        key, value = fm.group("key"), fm.group("value")
        if key == "Function Name":
            current = KernelResources(mangled=value, demangled=value)
            kernels.append(current)
        elif current is not None and key in _REMARK_KEYS:
            current.__setattr__(_REMARK_KEYS[key], _to_int(value))
    return kernels


def choose_target(requested: str, hipcc: str | None = None) -> tuple[str, str, str]:
    """(arch to compile for, arch_match, reason): the requested target when the compiler knows it,
    else the nearest older one it knows."""
    hipcc = hipcc or find_hipcc()
    base = requested.split(":")[0]  # drop target features (gfx90a:xnack-)
    if hipcc is None:
        return requested, "unknown", "no hipcc to ask which targets it knows"
    if _target_known(hipcc, requested):
        return requested, "exact", ""
    tried = [requested]
    frontier = list(_NEAREST_KNOWN.get(base, ()))
    while frontier:
        candidate = frontier.pop(0)
        if candidate in tried:
            continue
        tried.append(candidate)
        if _target_known(hipcc, candidate):
            reason = (
                f"{hipcc} does not know {requested}; compiled for {candidate}, the nearest target it knows"
                f" ({_FAMILY.get(base, '?')} -> {_FAMILY.get(candidate, '?')}: same wave size and register-file rules,"
                " so registers, spills and occupancy carry over; the ISA differs)"
            )
            return candidate, "compatible", reason
        frontier.extend(_NEAREST_KNOWN.get(candidate, ()))
    return requested, "unknown", f"{hipcc} knows neither {requested} nor a compatible target (tried {', '.join(tried)})"


def compile_check(
    source: Path,
    *,
    arch: str | None = "gfx90a",
    flags: tuple[str, ...] | list[str] = (),
    timeout: float = 300,
    keep_isa: bool = False,
    workdir: Path | None = None,
) -> CompileReport:
    """Compile `source` for `arch` (or the nearest target the compiler knows) and read each kernel's resources.

    Never raises for a source that does not compile: the report says `ok=False` with the first errors.
    Writes only under `workdir` (or a temporary directory); the source is read, never written.
    """
    source = Path(source)
    arch = arch or "gfx90a"  # callers pass None for "no preference"
    hipcc = find_hipcc()
    if hipcc is None:
        ok, why = hipcc_available()
        return CompileReport(False, arch, arch, "unknown", "", why, [], available=False, source=str(source))
    target, match, reason = choose_target(arch, hipcc)
    if match == "unknown":
        return CompileReport(False, target, arch, match, reason, reason, [], source=str(source))
    if workdir is not None:
        workdir = Path(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        return _compile_in(source, hipcc, target, arch, match, reason, list(flags), timeout, keep_isa, workdir, keep_files=True)
    with tempfile.TemporaryDirectory(prefix="rocm-perf-check-") as tmp:
        return _compile_in(source, hipcc, target, arch, match, reason, list(flags), timeout, keep_isa, Path(tmp), keep_files=False)


def compile_check_many(sources: list[Path], *, jobs: int | None = None, **kw) -> list[CompileReport]:
    """compile_check over many sources in a process pool sized to the cores (or `jobs`), in input order.

    With a `workdir`, each source compiles into its own numbered subfolder of it.
    """
    sources = [Path(s) for s in sources]
    if not sources:
        return []
    workdir = kw.pop("workdir", None)
    workdirs = [None if workdir is None else Path(workdir) / f"{i:03d}-{s.stem}" for i, s in enumerate(sources)]
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(sources)))
    if jobs == 1:
        return [compile_check(s, workdir=w, **kw) for s, w in zip(sources, workdirs)]
    # forkserver: callers may hold threads (the optimize loop does), and fork() under threads can deadlock.
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("forkserver")) as pool:
        futures = [pool.submit(compile_check, s, workdir=w, **kw) for s, w in zip(sources, workdirs)]
        return [f.result() for f in futures]


# ---- internals --------------------------------------------------------------------------------


def _compile_in(
    source: Path,
    hipcc: str,
    target: str,
    requested: str,
    match: str,
    reason: str,
    flags: list[str],
    timeout: float,
    keep_isa: bool,
    workdir: Path,
    keep_files: bool,
) -> CompileReport:
    obj = workdir / f"{source.stem}.{target}.o"
    # The target is ours to choose: a build's own --offload-arch would add a second set of remarks.
    flags = [f for f in flags if not f.startswith(("--offload-arch", "--amdgpu-target"))]
    argv = [hipcc, f"--offload-arch={target}"]
    if not any(re.fullmatch(r"-O[0-3sz]?|-Ofast", f) for f in flags):
        argv.append("-O3")
    argv += [*flags, "-idirafter", str(ROCTX_DECLARATIONS), "-c", str(source), "--cuda-device-only",
             f"-Rpass-analysis={REMARK_PASS}", "-o", str(obj)]
    if keep_isa:
        argv.append("-save-temps=obj")  # writes <stem>-hip-amdgcn-amd-amdhsa-<arch>.s next to the object
    log = workdir / "compile.log" if keep_files else None
    with amd_build_env() as env:
        done = process.run(argv, timeout=timeout, env=env, log=log)
    report = CompileReport(
        ok=False,
        arch=target,
        requested_arch=requested,
        arch_match=match,
        arch_reason=reason,
        errors="",
        source=str(source),
        command=done.argv,
        wall_s=done.wall_s,
        timed_out=done.timed_out,
    )
    if done.timed_out:
        report.errors = f"{source}: hipcc timed out after {timeout:g} s"
        return report
    output = done.stderr + "\n" + done.stdout
    if done.returncode != 0:
        check_space(workdir, output)  # a full disk is not a compile error
        report.errors = first_errors(output) or process.last_lines(output)
        return report
    report.ok = True
    report.kernels = parse_resource_remarks(output)
    names = demangle_all([k.mangled for k in report.kernels])
    for k in report.kernels:
        k.demangled = names.get(k.mangled, k.mangled)
    if keep_isa:
        _attach_isa(report, workdir, source, target, keep_files)
    return report


def _attach_isa(report: CompileReport, workdir: Path, source: Path, target: str, keep_files: bool) -> None:
    matches = sorted(workdir.glob(f"{source.stem}-hip-amdgcn-amd-amdhsa-{target}*.s"))
    if not matches:
        return
    text = matches[0].read_text(errors="replace")
    counts = count_instructions(text)
    for k in report.kernels:
        k.isa_instructions = counts.get(k.mangled)
    if keep_files:
        kept = workdir / f"{source.stem}.{target}.s"
        shutil.move(str(matches[0]), kept)
        report.isa_path = str(kept)
    else:
        report.isa = text


def _to_int(value: str) -> int | None:
    m = re.match(r"-?\d+", value)
    return int(m.group()) if m else None


@lru_cache(maxsize=64)
def _target_known(hipcc: str, arch: str) -> bool:
    """Ask the compiler itself: a syntax-only device compile of an empty file fails on an unknown target."""
    with amd_build_env() as env:
        empty = Path(env["TMPDIR"]) / "empty.hip"  # the build's scratch directory holds the probe too
        empty.write_text("\n")
        done = process.run(
            [hipcc, f"--offload-arch={arch}", "--cuda-device-only", "-fsyntax-only", "-x", "hip", str(empty)],
            timeout=60,
            env=env,
        )
    return done.returncode == 0 and not done.timed_out
