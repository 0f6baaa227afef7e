"""`rocm-perf hipcc` (and the `rocm-perf-hipcc` / `rocm-perf-hip-cxx` scripts): hipcc's command
line, building with the host backend's C++ compiler and HIP host runtime.

A make or CMake project that compiles with hipcc builds unmodified for the CPU: every source
goes through the launch pre-pass together with the project headers it includes
(host_sources.py), compiles with `$CXX` (default g++) against the runtime, and links with the
flags the runtime needs. What only means something to a GPU compiler (`--offload-arch=`, `-fgpu-rdc`,
`-mcode-object-version=`, ...) is ignored with a note; `-mno-wavefrontsize64` selects 32-lane
warps, as `ROCM_PERF_HOST_WARP_SIZE=32` does. The HIP libraries (`-lamdhip64`, ...) are not
linked: the runtime is header-only.

Exit status and messages are the compiler's; errors of our own (a refused construct, an
unknown option's argument missing) are one line on stderr and exit status 1.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from rocm_perf.backends.host_libraries import AS_NEEDED, replaced_link_option
from rocm_perf.backends.host_prebuilt import gch_path, prebuilt_dir
from rocm_perf.backends.host_libraries import link_flags as library_link_flags
from rocm_perf.errors import RocmPerfError

RUNTIME_DIR = Path(__file__).resolve().parent / "host_runtime"
LINK_FLAGS = ["-rdynamic", "-lpthread", "-ldl"]  # as host.py: exported kernel symbols name the kernels
HIP_SUFFIXES = {".cu", ".hip", ".cpp", ".cc", ".cxx", ".c++", ".cp", ".C"}  # hipcc compiles .cpp as HIP too
C_SUFFIXES = {".c"}
LINK_INPUT_SUFFIXES = {".o", ".obj", ".a", ".so", ".lo"}
# GPU-only options: ignored with a note (prefix match; those ending in a space take an argument).
GPU_OPTIONS = (
    "--offload-arch=", "--amdgpu-target=", "--cuda-gpu-arch=", "-mcode-object-version=", "--rocm-path=",
    "--hip-path=", "--hip-device-lib-path=", "-fgpu-rdc", "-fno-gpu-rdc", "--hip-link", "-fhip-new-launch-api",
    "-fgpu-flush-denormals-to-zero", "-fno-gpu-flush-denormals-to-zero", "-munsafe-fp-atomics",
    "-mno-unsafe-fp-atomics", "-fgpu-default-stream=", "-fgpu-sanitize", "-fno-gpu-sanitize", "-mcumode",
    "-mno-cumode", "-nogpulib", "-nogpuinc", "--cuda-host-only", "-fcuda-flush-denormals-to-zero",
    "-fhip-fp32-correctly-rounded-divide-sqrt", "-fno-hip-fp32-correctly-rounded-divide-sqrt", "-fgpu-exceptions",
    "--gpu-max-threads-per-block=", "-fgpu-allow-device-init", "-parallel-jobs=", "--offload-compress",
    "--no-offload-arch=", "-offload-arch=", "-mxnack", "-mno-xnack", "-msramecc", "-mno-sramecc",
)
# clang-only options g++ would reject, dropped silently (with the next argument where it takes one).
CLANG_ONLY = ("-fcolor-diagnostics", "-fno-color-diagnostics", "-Qunused-arguments", "-Wno-unused-command-line-argument",
              "-ffp-contract=fast-honor-pragmas", "-Rpass", "-fno-crash-diagnostics", "-fstandalone-debug")
CLANG_ONLY_WITH_ARGUMENT = ("-Xclang", "-mllvm", "-Xarch_device", "-Xoffload-linker")
# Options that ask for GPU code only: nothing a CPU build can give.
DEVICE_ONLY = ("--cuda-device-only", "--offload-device-only", "-emit-llvm", "--genco", "-fgpu-rdc-device-only")
HIP_LIBRARIES = {"-lamdhip64", "-lhip_hcc", "-lhiprtc", "-lamd_comgr", "-lhsa-runtime64", "-lhipamd", "-lgalaxyhip"}
# Options whose argument is the next word.
TAKES_ARGUMENT = {"-o", "-I", "-isystem", "-iquote", "-idirafter", "-include", "-imacros", "-D", "-U", "-x", "-MF",
                  "-MT", "-MQ", "-L", "-l", "-Xlinker", "-Xassembler", "-Xpreprocessor", "-Xarch_host", "-arch",
                  "-target", "--target", "-isysroot", "--sysroot", "-T", "-u", "-z", "-e"}
LINK_ONLY_ARGUMENT = {"-L", "-l", "-Xlinker", "-T", "-u", "-z", "-e"}
OLD_STANDARDS = {"c++98", "c++03", "c++0x", "c++11", "c++1y", "c++14", "gnu++98", "gnu++03", "gnu++11", "gnu++14",
                 "gnu++1y"}

USAGE = """usage: rocm-perf hipcc [hipcc options] FILE...

Builds HIP sources for the CPU with the rocm-perf host runtime, accepting hipcc's command line:
  -c, -o FILE, -I DIR, -D NAME[=VALUE], -O*, -g, -std=..., -x hip, -fPIC, -shared, -M*, -L/-l, -Wl,...
GPU-only options (--offload-arch=..., -fgpu-rdc, ...) are ignored with a note.
Environment: CXX (the C++ compiler, default g++), ROCM_PERF_HOST_WARP_SIZE (32 or 64, default 64)."""


@dataclass
class Invocation:
    """A hipcc command line, sorted into what each step needs."""

    sources: list[tuple[Path, str]] = field(default_factory=list)  # (file, language: "hip" or "c")
    link_inputs: list[str] = field(default_factory=list)
    compile_flags: list[str] = field(default_factory=list)
    link_flags: list[str] = field(default_factory=list)
    include_dirs: list[Path] = field(default_factory=list)
    quote_dirs: list[Path] = field(default_factory=list)
    output: str | None = None
    stop_after: str | None = None  # "-c", "-E", "-S" or "-M"/"-MM" (dependencies only)
    dep_file: str | None = None
    writes_deps: bool = False
    notes: list[str] = field(default_factory=list)
    warp_size: int | None = None
    verbose: bool = False
    std_given: bool = False
    static_library: bool = False  # --emit-static-lib: archive the objects into -o
    libraries: set[str] = field(default_factory=set)  # HIP libraries the compiled units include (host_libraries.py)


def expand_response_files(argv: list[str], depth: int = 0) -> list[str]:
    """`@file` arguments replaced by the words of the file, as compilers do."""
    out: list[str] = []
    for arg in argv:
        if arg.startswith("@") and len(arg) > 1 and depth < 8:
            try:
                words = shlex.split(Path(arg[1:]).read_text(encoding="utf-8"))
            except OSError as e:
                raise RocmPerfError(f"{arg[1:]}: cannot read the response file ({e.strerror})") from e
            out.extend(expand_response_files(words, depth + 1))
        else:
            out.append(arg)
    return out


def parse(argv: list[str], cwd: Path) -> Invocation:
    """Sort a hipcc command line; raises RocmPerfError for an option missing its argument."""
    inv = Invocation()
    language: str | None = None  # from -x, for the inputs that follow
    args = expand_response_files(argv)
    i = 0

    def value(option: str) -> str:
        nonlocal i
        if i + 1 >= len(args):
            raise RocmPerfError(f"rocm-perf hipcc: {option} needs an argument")
        i += 1
        return args[i]

    while i < len(args):
        a = args[i]
        if a in ("-c", "-E", "-S"):
            inv.stop_after = a
        elif a in ("-M", "-MM"):
            inv.stop_after = a
            inv.compile_flags.append(a)
        elif a in ("-MD", "-MMD"):
            inv.writes_deps = True
            inv.compile_flags.append(a)
        elif a == "-MP":
            inv.compile_flags.append(a)
        elif a in ("-MF", "-MT", "-MQ"):
            v = value(a)
            if a == "-MF":
                inv.dep_file = v
            inv.compile_flags += [a, v]
        elif a == "-o":
            inv.output = value(a)
        elif a.startswith("-o") and len(a) > 2:
            inv.output = a[2:]
        elif a == "-x":
            language = _language(value(a))
        elif a.startswith("-x") and len(a) > 2:
            language = _language(a[2:])
        elif a in ("-v", "--verbose"):
            inv.verbose = True
            inv.compile_flags.append("-v")
            inv.link_flags.append("-v")
        elif a in DEVICE_ONLY:
            raise RocmPerfError(f"rocm-perf hipcc: {a} asks for GPU code only (a code object or LLVM IR), which the "
                                "host backend cannot build; build this target with the real hipcc")
        elif a == "--emit-static-lib":
            inv.static_library = True
        elif a in ("-mno-wavefrontsize64", "-mwavefrontsize64"):
            inv.warp_size = 32 if a == "-mno-wavefrontsize64" else 64
        elif a.startswith(GPU_OPTIONS) or a in GPU_OPTIONS:
            inv.notes.append(a)
        elif a in ("--offload-arch", "--amdgpu-target", "--cuda-gpu-arch"):
            inv.notes.append(f"{a} {value(a)}")
        elif a.startswith(CLANG_ONLY):
            pass
        elif a in CLANG_ONLY_WITH_ARGUMENT:
            value(a)
        elif a == "-Xarch_host":
            inv.compile_flags.append(value(a))
        elif a in HIP_LIBRARIES:
            pass
        elif a in ("-l",) and i + 1 < len(args) and f"-l{args[i + 1]}" in HIP_LIBRARIES:
            i += 1
        elif replaced_link_option(a) is not None:
            inv.link_flags += replaced_link_option(a)  # a HIP library: header-only here, or its CPU stand-in
        elif a == "-l" and i + 1 < len(args) and replaced_link_option(f"-l{args[i + 1]}") is not None:
            inv.link_flags += replaced_link_option(f"-l{args[i + 1]}")
            i += 1
        elif a in ("-I", "-isystem", "-iquote", "-idirafter"):
            d = value(a)
            inv.compile_flags += [a, d]
            (inv.quote_dirs if a == "-iquote" else inv.include_dirs if a == "-I" else []).append(cwd / d)
        elif a.startswith("-I") and len(a) > 2:
            inv.compile_flags.append(a)
            inv.include_dirs.append(cwd / a[2:])
        elif a.startswith("-iquote") and len(a) > 7:
            inv.compile_flags.append(a)
            inv.quote_dirs.append(cwd / a[7:])
        elif a.startswith(("-std=", "--std=")):
            std = a.split("=", 1)[1]
            inv.std_given = True
            if std in OLD_STANDARDS:
                # The runtime is C++17; hipcc's clang defaults to it too.
                inv.notes.append(f"{a} (raised to -std=c++17: the host runtime needs C++17)")
                a = "-std=c++17" if std.startswith("c++") else "-std=gnu++17"
            inv.compile_flags.append(a)
            inv.link_flags.append(a)
        elif a in LINK_ONLY_ARGUMENT:
            inv.link_flags += [a, value(a)]
        elif a.startswith(("-L", "-l", "-Wl,")) or a in ("-shared", "-static", "-rdynamic", "-static-libstdc++",
                                                         "-static-libgcc", "-nostdlib", "-pie", "-no-pie"):
            inv.link_flags.append(a)
            if a == "-shared":
                inv.compile_flags.append("-fPIC")
        elif a in TAKES_ARGUMENT:
            inv.compile_flags += [a, value(a)]
        elif a.startswith("-") and a != "-":
            # -D, -U, -O, -g, -W, -f, -m, -pthread, -w, -pedantic, ...: the compiler's, and the
            # ones that matter when linking too (sanitizers, -pthread, -O for LTO) go to both.
            inv.compile_flags.append(a)
            if a.startswith(("-f", "-m", "-O", "-g", "-pthread")):
                inv.link_flags.append(a)
        else:
            path = Path(a)
            suffix = path.suffix
            if language == "c" or (language is None and suffix in C_SUFFIXES):
                inv.sources.append((cwd / path, "c"))
            elif language == "hip" or (language is None and suffix in HIP_SUFFIXES):
                inv.sources.append((cwd / path, "hip"))
            else:
                inv.link_inputs.append(a)
        i += 1
    return inv


def _language(name: str) -> str | None:
    if name in ("hip", "cu", "cuda", "c++", "cpp", "hip-cpp-output"):
        return "hip"
    if name == "c":
        return "c"
    return None  # "none": by suffix again


def _compilers() -> tuple[str, str]:
    cxx = os.environ.get("ROCM_PERF_HOST_CXX") or os.environ.get("CXX") or "g++"
    # CXX may be this very wrapper (a project that sets CXX=hipcc): never call ourselves.
    if Path(cxx).name in ("hipcc", "rocm-perf-hipcc", "rocm-perf-hip-cxx"):
        cxx = "g++"
    cc = "gcc" if Path(cxx).name.endswith("g++") else "cc"
    return cxx, cc


def _warp_flags(inv: Invocation) -> list[str]:
    size = inv.warp_size
    if size is None:
        from_env = os.environ.get("ROCM_PERF_HOST_WARP_SIZE", "").strip()
        if from_env:
            if from_env not in ("32", "64"):
                raise RocmPerfError(f"ROCM_PERF_HOST_WARP_SIZE={from_env!r}: must be 32 or 64")
            size = int(from_env)
    return [f"-DROCM_PERF_WARP_SIZE={size}"] if size and size != 64 else []


def _rewrite_depfile(dep_file: Path, replacements: dict[str, str]) -> None:
    """Point a compiler-written dependency file at the user's files instead of our copies."""
    try:
        text = dep_file.read_text(encoding="utf-8")
    except OSError:
        return
    for ours, theirs in sorted(replacements.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(ours, theirs)
    dep_file.write_text(text, encoding="utf-8")


def _without_dependency_flags(flags: list[str]) -> list[str]:
    """`flags` less those that only write make rules (-MD, -MF FILE, ...): they do not change what
    is compiled, and the precompiled header's build must not write the user's dependency file."""
    out, skip = [], False
    for flag in flags:
        if skip:
            skip = False
        elif flag in ("-MF", "-MT", "-MQ"):
            skip = True
        elif flag not in ("-MD", "-MMD", "-MP", "-M", "-MM"):
            out.append(flag)
    return out


def compile_source(source: Path, language: str, obj: str | None, inv: Invocation, work: Path, cwd: Path) -> int:
    """Compile one source (to `obj`, or to the preprocessor's output for -E/-M); the compiler's status."""
    from rocm_perf.backends.host_sources import prepare_unit

    cxx, cc = _compilers()
    out = ["-o", obj] if obj else []
    stop = [inv.stop_after] if inv.stop_after in ("-c", "-E", "-S") else ([] if inv.stop_after else ["-c"])
    if language == "c":
        return subprocess.call([cc, *inv.compile_flags, *stop, str(source), *out], cwd=cwd)
    from rocm_perf.backends import host_outside

    tracking = host_outside.active() and inv.stop_after in (None, "-c")  # a project build's copy (optimize/outside.py)

    def needs() -> None:
        if tracking:
            host_outside.report_needs([source], inv.compile_flags, inv.include_dirs, inv.quote_dirs, cwd, work,
                                      RUNTIME_DIR, cxx)

    try:
        unit = prepare_unit(source, work, include_dirs=inv.include_dirs, quote_dirs=inv.quote_dirs, runtime_dir=RUNTIME_DIR)
    except RocmPerfError:
        needs()
        raise
    inv.libraries |= unit.libraries
    std = [] if inv.std_given else ["-std=c++17"]
    own_deps = ["-MMD", "-MF", str(work / "outside.d")] if tracking and not inv.writes_deps else []
    flags = [*std, *_warp_flags(inv), *unit.runtime_defines]
    pch = None
    if inv.stop_after in (None, "-c", "-S"):  # not for -E or -M: they print the headers themselves
        # host_prebuilt.py: the headers only; a project's link steps do not know which object its units need
        pch = prebuilt_dir(cxx, [*flags, *_without_dependency_flags(inv.compile_flags)], cwd,
                           with_object=False, source_dirs=(source.parent,))
    argv = [cxx, *flags, *(["-I", str(pch)] if pch else []), "-I", str(RUNTIME_DIR), "-iquote", str(source.parent),
            *inv.compile_flags, *own_deps, "-include", "hip/hip_runtime.h", *stop, "-x", "c++", str(unit.compile_path), *out]
    status = subprocess.call(argv, cwd=cwd)
    if status != 0:
        needs()
    elif tracking and own_deps:
        host_outside.report_reads(work / "outside.d", cwd, source)
    if status == 0 and (inv.writes_deps or inv.stop_after in ("-M", "-MM")):
        replacements = {str(shadow): str(original) for original, shadow in unit.shadowed.items()}
        replacements[str(unit.compile_path)] = str(source)
        if pch:  # a dependency on the cache, which may be pruned, would fail make: name the header
            for stand_in in (gch_path(pch), pch / "hip" / "hip_runtime.h"):
                replacements[str(stand_in)] = str(RUNTIME_DIR / "hip" / "hip_runtime.h")
        dep = inv.dep_file or (str(Path(obj).with_suffix(".d")) if obj else None)
        if dep and inv.writes_deps:
            _rewrite_depfile(cwd / dep, replacements)
            if tracking:
                host_outside.report_reads(cwd / dep, cwd, source)
    return status


def run(argv: list[str], cwd: Path | None = None) -> int:
    """Build as hipcc would; returns the exit status."""
    cwd = cwd or Path.cwd()
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 1
    cxx, _ = _compilers()
    if argv[0] in ("--version", "-dumpversion", "-dumpmachine", "-print-search-dirs", "-print-libgcc-file-name") or (
        argv[0].startswith("-print-")
    ):
        if argv[0] == "--version":
            print(f"rocm-perf hipcc: HIP sources built for the CPU by {cxx} with the rocm-perf host runtime "
                  f"({RUNTIME_DIR})")
        return subprocess.call([cxx, *argv], cwd=cwd)
    inv = parse(argv, cwd)
    if inv.notes:
        shown = ", ".join(inv.notes)
        print(f"rocm-perf hipcc: note: ignoring {shown} (the host backend builds for the CPU)", file=sys.stderr)
    if not inv.sources and not inv.link_inputs:
        if inv.verbose:
            return subprocess.call([cxx, "-v"], cwd=cwd)
        raise RocmPerfError("rocm-perf hipcc: no input files")
    if inv.stop_after and inv.output and len(inv.sources) > 1:
        raise RocmPerfError("rocm-perf hipcc: cannot specify -o with -c, -S or -E and several source files")

    work = Path(tempfile.mkdtemp(prefix="rocm-perf-hipcc-"))
    try:
        if inv.stop_after:
            for source, language in inv.sources:
                obj = inv.output
                if obj is None and inv.stop_after in ("-c", "-S"):
                    obj = source.with_suffix(".o" if inv.stop_after == "-c" else ".s").name
                status = compile_source(source, language, obj, inv, work / source.name, cwd)
                if status:
                    return status
            return 0
        objects = []
        for n, (source, language) in enumerate(inv.sources):
            obj = str(work / f"{n}_{source.stem}.o")
            status = compile_source(source, language, obj, inv, work / f"{n}_{source.name}", cwd)
            if status:
                return status
            objects.append(obj)
        if inv.static_library:
            if not inv.output:
                raise RocmPerfError("rocm-perf hipcc: --emit-static-lib needs -o LIBRARY.a")
            (cwd / inv.output).unlink(missing_ok=True)
            return subprocess.call([os.environ.get("AR", "ar"), "rcs", inv.output, *objects, *inv.link_inputs], cwd=cwd)
        link = [cxx, *objects, *inv.link_inputs, "-o", inv.output or "a.out", *inv.link_flags, *LINK_FLAGS,
                *library_link_flags(inv.libraries), *AS_NEEDED]
        return subprocess.call(link, cwd=cwd)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """The console scripts' entry point."""
    try:
        return run(list(sys.argv[1:] if argv is None else argv))
    except RocmPerfError as e:
        print(str(e), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
