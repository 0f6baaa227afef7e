"""`rocm-perf hipcc`: hipcc's command line building for the CPU, through `rocm_perf.cli.main`
the way make and CMake call it, on real sources (tests/data/host/multi_tu: kernels and
launches in a header and in two translation units) and real compilers."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import DATA, IN_CI
from rocm_perf.backends.host_toolchain import host_build_environment
from rocm_perf.cli import main

MULTI = DATA / "host" / "multi_tu"
pytestmark = pytest.mark.slow


def hipcc(*args: str) -> int:
    return main(["hipcc", *args])


def test_compile_each_unit_then_link_several_objects(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    inc = str(MULTI / "include")
    assert hipcc("-c", "-O2", "-std=c++17", "-fPIC", "-I", inc, "-DUNUSED=1", "--offload-arch=gfx90a",
                 str(MULTI / "square.cu"), "-o", "square.o") == 0
    assert "ignoring --offload-arch=gfx90a" in capsys.readouterr().err
    assert hipcc("-c", f"-I{inc}", "-x", "hip", str(MULTI / "main.cu")) == 0  # -o defaults to main.o
    assert hipcc("square.o", "main.o", "-o", "prog") == 0
    done = subprocess.run(["./prog"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "multi-unit program: all match" in done.stdout
    assert not list(tmp_path.glob("*.host.cpp")), "nothing of ours is written next to the build"


def test_compile_and_link_in_one_command(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert hipcc("-I", str(MULTI / "include"), str(MULTI / "square.cu"), str(MULTI / "main.cu"), "-o", "prog") == 0
    assert subprocess.run(["./prog"], capture_output=True, timeout=120).returncode == 0


def test_dependency_files_name_the_users_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert hipcc("-c", "-MD", "-MF", "main.d", "-I", str(MULTI / "include"), str(MULTI / "main.cu"), "-o", "main.o") == 0
    deps = Path("main.d").read_text()
    assert str(MULTI / "main.cu") in deps and str(MULTI / "include" / "kernels.hpp") in deps
    assert "shadow" not in deps and ".host.cpp" not in deps and "rocm-perf-hipcc-" not in deps


def test_static_library_through_emit_static_lib(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert hipcc("--emit-static-lib", "-fPIC", "-I", str(MULTI / "include"), str(MULTI / "square.cu"), "-o", "libsq.a") == 0
    assert hipcc("-I", str(MULTI / "include"), str(MULTI / "main.cu"), "-L.", "-lsq", "-lamdhip64", "-o", "prog") == 0
    assert subprocess.run(["./prog"], capture_output=True, timeout=120).returncode == 0


def test_gpu_only_output_is_refused_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert hipcc("--cuda-device-only", "-c", str(MULTI / "square.cu")) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("rocm-perf hipcc: --cuda-device-only asks for GPU code only") and "\n" not in err


def test_a_refused_construct_names_the_file_and_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert hipcc("-c", str(DATA / "host" / "unsupported_gcn_asm.cu")) == 1
    assert "unsupported_gcn_asm.cu:7: inline GCN assembly" in capsys.readouterr().err


def test_compiler_errors_keep_the_users_file_and_line(tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    bad = tmp_path / "bad.hip"
    bad.write_text("#include <hip/hip_runtime.h>\n__global__ void k(float* x) {\n  x[0] = nope;\n}\n")
    assert hipcc("-c", str(bad)) != 0
    assert f"{bad}:3:" in capfd.readouterr().err


def test_warp_size_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    source = tmp_path / "w.cu"
    source.write_text('#include <hip/hip_runtime.h>\n#include <cstdio>\nint main() { std::printf("%d\\n", warpSize); }\n')
    monkeypatch.setenv("ROCM_PERF_HOST_WARP_SIZE", "32")
    assert hipcc(str(source), "-o", "w32") == 0
    monkeypatch.delenv("ROCM_PERF_HOST_WARP_SIZE")
    assert hipcc(str(source), "-mwavefrontsize64", "-o", "w64") == 0
    assert subprocess.run(["./w32"], capture_output=True, text=True).stdout.strip() == "32"
    assert subprocess.run(["./w64"], capture_output=True, text=True).stdout.strip() == "64"


def test_response_files_are_expanded(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "args.rsp").write_text(f'-I "{MULTI / "include"}" -c\n')
    assert hipcc("@args.rsp", str(MULTI / "square.cu"), "-o", "sq.o") == 0
    assert (tmp_path / "sq.o").is_file()


def test_a_cmake_hip_language_project_builds_through_the_toolchain(tmp_path):
    if shutil.which("cmake") is None:
        message = "cmake not installed (apt-get install -y cmake)"
        if IN_CI:
            pytest.fail(message + ": CI must have it")
        pytest.skip(message)
    project = tmp_path / "proj"
    (project / "include").mkdir(parents=True)
    for f in ("square.cu", "main.cu"):
        shutil.copy(MULTI / f, project / f)
    shutil.copy(MULTI / "include" / "kernels.hpp", project / "include" / "kernels.hpp")
    (project / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.21)\n"
        "project(multi LANGUAGES CXX HIP)\n"
        "find_package(hip REQUIRED)\n"
        "add_executable(prog main.cu square.cu)\n"
        "set_source_files_properties(main.cu square.cu PROPERTIES LANGUAGE HIP)\n"
        "target_include_directories(prog PRIVATE include)\n"
        "target_link_libraries(prog PRIVATE hip::host)\n"
    )
    env = host_build_environment(tmp_path / "bin")
    full_env = {**__import__("os").environ, **env}
    configure = subprocess.run(["cmake", "-S", str(project), "-B", str(tmp_path / "build")], env=full_env,
                               capture_output=True, text=True, timeout=300)
    assert configure.returncode == 0, configure.stdout + configure.stderr
    build = subprocess.run(["cmake", "--build", str(tmp_path / "build")], env=full_env, capture_output=True, text=True,
                           timeout=600)
    assert build.returncode == 0, build.stdout + build.stderr
    done = subprocess.run([str(tmp_path / "build" / "prog")], capture_output=True, text=True, timeout=120)
    assert "multi-unit program: all match" in done.stdout


def test_doctor_shows_the_wrapper(capsys):
    assert main(["doctor", "--json"]) in (0, 1)
    checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    wrapper = checks["hipcc wrapper (host)"]
    assert wrapper["ok"] and "rocm-perf-host.cmake" in wrapper["detail"]
