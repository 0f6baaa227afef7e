"""`rocm-perf doctor` on this machine, with the rocprofv3/rocminfo TEST DOUBLES, and with nothing installed."""

from __future__ import annotations

import json
import os
import sys

import pytest

from conftest import ROOT
from rocm_perf.backends.doctor import INSTALL_CXX, INSTALL_HIPCC, INSTALL_ROCPROFV3, format_checks, gather_checks, run_doctor
from rocm_perf.backends.select import make_backend

DOUBLES = ROOT / "tests" / "doubles"


def host_backend_works() -> bool:
    try:
        return make_backend("host").available()[0]
    except ImportError:
        return False


def checks_by_name(data: dict) -> dict[str, dict]:
    return {c["name"]: c for c in data["checks"]}


def test_doctor_json_on_this_machine(hipcc, capsys):
    code = run_doctor(as_json=True)
    data = json.loads(capsys.readouterr().out)
    assert code == (0 if host_backend_works() else 1)
    assert data["host_backend_works"] is host_backend_works()
    checks = checks_by_name(data)
    assert {"host", "rocm", "host C++", "hipcc (AMD targets)", "rocprofv3", "GPU agents", "libclang (python)", "clang resource dir"} <= set(checks)
    hip = checks["hipcc (AMD targets)"]
    assert hip["ok"] and "HIP version" in hip["detail"] and "gfx942 checked as gfx90a (compatible)" in hip["detail"]
    assert checks["libclang (python)"]["ok"]
    # the hipcc-compatible wrapper projects build with: the installed script, and the CMake toolchain
    wrapper = checks["hipcc wrapper (host)"]
    script, toolchain = wrapper["detail"].split("; CMake toolchain ")
    assert wrapper["ok"] and os.path.basename(script) == "rocm-perf-hipcc" and os.access(script, os.X_OK), wrapper
    assert toolchain.endswith("rocm-perf-host.cmake") and os.path.isfile(toolchain)
    resource_dir = checks["clang resource dir"]["detail"]
    assert checks["clang resource dir"]["ok"] and os.path.isfile(os.path.join(resource_dir, "include", "stddef.h"))
    for check in data["checks"]:
        if check["ok"]:
            assert check["install"] is None
    assert data["machine"]["cpu"]["count"] == os.cpu_count()


def test_without_a_gpu_rocm_is_unavailable_with_the_reason_and_the_fix(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "rocminfo").symlink_to(DOUBLES / "fake_rocminfo")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_ROCMINFO_MODE", "none")
    monkeypatch.delenv("ROCM_PATH", raising=False)
    checks = {c.name: c for c in gather_checks()}
    assert not checks["rocm"].ok
    assert "rocprofv3 not found" in checks["rocm"].detail and "ROCk module is NOT loaded" in checks["rocm"].detail
    assert checks["rocm"].install == INSTALL_ROCPROFV3
    assert not checks["GPU agents"].ok and "amdgpu-dkms" in checks["GPU agents"].install


def test_with_rocprofv3_and_gpu_agents_the_rocm_backend_is_available(tmp_path, monkeypatch, capsys):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "rocprofv3").symlink_to(DOUBLES / "fake_rocprofv3")
    (bin_dir / "rocminfo").symlink_to(DOUBLES / "fake_rocminfo")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    checks = {c.name: c for c in gather_checks()}
    assert checks["rocm"].ok and checks["rocm"].install is None
    assert checks["rocprofv3"].detail.endswith("rocprofv3 (test double) ROCm version 7.0.0")
    assert checks["GPU agents"].detail == "2: AMD Instinct MI300X (gfx942, 304 CUs), AMD Instinct MI300X (gfx942, 304 CUs)"
    run_doctor()
    out = capsys.readouterr().out
    assert "ok  rocm" in out


def test_nothing_installed_lists_every_install_command(tmp_path, monkeypatch, capsys):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    monkeypatch.setenv("PATH", str(bin_dir))
    for var in ("ROCM_PATH", "HIPCC", "CXX"):
        monkeypatch.delenv(var, raising=False)
    code = run_doctor()
    out = capsys.readouterr().out
    assert code == (0 if host_backend_works() else 1)
    assert "NO  host C++" in out and "NO  hipcc (AMD targets)" in out
    install = out[out.index("to install what is missing:") :]
    for command in (INSTALL_HIPCC, INSTALL_CXX, INSTALL_ROCPROFV3):
        assert command in install
    assert install.count(INSTALL_ROCPROFV3) == 1  # one line per distinct fix


@pytest.mark.parametrize("host_ok", [True, False])
def test_exit_code_follows_the_host_backend(monkeypatch, capsys, host_ok):
    from rocm_perf.backends import doctor

    real = doctor.gather_checks

    def with_host(ok: bool):
        checks = [c for c in real() if not (c.area == "backends" and c.name == "host")]
        return [doctor.Check("backends", "host", ok, "stated by the test")] + checks

    monkeypatch.setattr(doctor, "gather_checks", lambda: with_host(host_ok))
    assert run_doctor() == (0 if host_ok else 1)
    assert ("works here with the host backend" in capsys.readouterr().out) is host_ok


def test_format_groups_by_area():
    from rocm_perf.backends.doctor import Check

    text = format_checks([Check("backends", "host", True, "CPU: 2 threads"), Check("compilers", "hipcc (AMD targets)", False, "hipcc not found", INSTALL_HIPCC)])
    assert text.splitlines()[:4] == [
        "backends:",
        "  ok  host                   CPU: 2 threads",
        "compilers:",
        "  NO  hipcc (AMD targets)    hipcc not found",
    ]
    assert f"  hipcc (AMD targets): {INSTALL_HIPCC}" in text


def test_cli_doctor_json():
    import subprocess

    done = subprocess.run([sys.executable, "-m", "rocm_perf.cli", "doctor", "--json"], capture_output=True, text=True, timeout=300)
    data = json.loads(done.stdout)
    assert done.returncode == (0 if data["host_backend_works"] else 1)
    assert data["host_backend_works"] is host_backend_works()


def test_host_timing_says_which_clocks_this_machine_gives_and_how_to_get_perf(monkeypatch):
    from rocm_perf.backends import host_clocks

    timing = {c.name: c for c in gather_checks() if c.area == "host timing"}
    assert set(timing) == {"thread CPU time", "perf counters", "CPU pinning"}
    assert timing["thread CPU time"].ok and "--metric cpu-path (which --metric auto takes when a pair's builds run " \
        "together), probed-path, and adjusted-path between them" in timing["thread CPU time"].detail
    pinning = host_clocks.pinning_status()
    assert timing["CPU pinning"].ok is (pinning == "")
    assert ("runs a pair's two builds together on one CPU" if not pinning else "one after the other here") in timing["CPU pinning"].detail
    # A machine that refuses to pin: optimize runs its pairs apart, and doctor says so.
    monkeypatch.setattr(host_clocks, "pinning_status", lambda: "sched_setaffinity refused: Operation not permitted")
    refused_pin = {c.name: c for c in gather_checks() if c.area == "host timing"}["CPU pinning"]
    assert not refused_pin.ok and "one after the other here (--pairing apart)" in refused_pin.detail
    probe = host_clocks.perf_counters_status()
    assert timing["perf counters"].ok is (probe == "")
    # The probe's answers on a machine that refuses (paranoid 3): the reason and the fix.
    refused = "perf_event_open refused cycles: Permission denied (perf_event_paranoid 3)"
    monkeypatch.setattr(host_clocks, "perf_counters_status", lambda: refused)
    monkeypatch.setattr(host_clocks, "perf_event_paranoid", lambda: 3)
    perf = {c.name: c for c in gather_checks() if c.area == "host timing"}["perf counters"]
    assert not perf.ok and perf.detail.startswith(refused) and perf.install == host_clocks.FIX_PARANOID
