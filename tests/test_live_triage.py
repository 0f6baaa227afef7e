"""`rocm-perf triage --live` against a TEST DOUBLE of the engines' HTTP profiling API
(tests/doubles/fake_engine_server.py: SGLang's and vLLM's documented routes, writing the real
PyTorch profiler trace tests/data/torch-trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz in two
halves, so that the reader must wait for it to be complete). The real engines need a GPU.

What a live profile must do: start the profiler as the engine's API says, wait for the new traces,
triage exactly those (not an older trace in the same folder), record the engine, URL and settings
in profile_metadata.json; and when the server is not there, refuses, has no profiler or never
writes a trace, say so in one line after a bounded wait.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import DATA, ROOT
from rocm_perf.cli import main

DOUBLE = ROOT / "tests" / "doubles" / "fake_engine_server.py"
FIXTURE = DATA / "torch-trace" / "mi250_minitoy_train_ROCm6_2_kineto.json.gz"


@pytest.fixture
def engine(tmp_path):
    """start(engine, mode=...) -> base URL of a running double (stopped at the end)."""
    procs = []

    def start(kind: str, mode: str = "ok", trace_dir: Path | None = None) -> str:
        argv = [sys.executable, str(DOUBLE), "--engine", kind, "--mode", mode, "--write-delay", "0.4"]
        if trace_dir is not None:
            argv += ["--trace-dir", str(trace_dir)]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        procs.append(proc)
        port = int(proc.stdout.readline().split()[1])
        return f"http://127.0.0.1:{port}"

    yield start
    for proc in procs:
        proc.kill()
        proc.wait()


def fixture_triage(capsys) -> dict:
    assert main(["triage", str(FIXTURE), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def live_dirs(cwd: Path) -> list[Path]:
    return sorted((cwd / "runs" / "live").iterdir())


def test_sglang_steps_are_profiled_and_triaged_with_the_engine_in_the_metadata(engine, tmp_path, monkeypatch, capsys):
    expected = fixture_triage(capsys)
    monkeypatch.chdir(tmp_path)
    url = engine("sglang")
    assert main(["triage", "--live", url, "--engine", "sglang", "--steps", "3", "--json", "--wait", "60"]) == 0
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert doc["kernel_table"]["kernels"] == expected["kernel_table"]["kernels"]
    assert doc["fuse_opportunities"]["patterns"] == expected["fuse_opportunities"]["patterns"]
    [folder] = live_dirs(tmp_path)
    [trace] = (folder / "traces").iterdir()
    assert trace.name.endswith("-TP-0.trace.json.gz") and trace.read_bytes() == FIXTURE.read_bytes()  # whole, not half
    md = json.loads((folder / "profile_metadata.json").read_text())
    assert md["live_engine"] == "sglang" and md["live_url"] == url
    assert md["live_settings"]["num_steps"] == 3 and md["live_settings"]["activities"] == ["CPU", "GPU"]
    assert md["live_settings"]["output_dir"] == str((folder / "traces").resolve())
    assert json.loads((folder / "server_info.json").read_text())["model_path"] == "double/model"
    assert "1 trace file(s)" in err


def test_vllm_is_found_by_asking_and_only_its_new_trace_is_triaged(engine, tmp_path, monkeypatch, capsys):
    expected = fixture_triage(capsys)
    shared = tmp_path / "vllm_profile"
    shared.mkdir()
    shutil.copy(FIXTURE, shared / "old_rank0.1.pt.trace.json.gz")  # an earlier profile in the engine's folder
    monkeypatch.chdir(tmp_path)
    url = engine("vllm", trace_dir=shared)
    assert main(["triage", "--live", url, "--seconds", "0.5", "--trace-dir", str(shared), "--json", "--wait", "60"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["kernel_table"]["dispatches"] == expected["kernel_table"]["dispatches"]  # one trace's, not two
    [folder] = live_dirs(tmp_path)
    [link] = (folder / "traces").iterdir()
    assert link.is_symlink() and link.resolve().parent == shared.resolve() and "old_rank0" not in link.name
    md = json.loads((folder / "profile_metadata.json").read_text())
    assert md["live_engine"] == "vllm" and md["live_settings"]["seconds"] == 0.5
    assert sorted(p.name for p in shared.iterdir())[1] == "old_rank0.1.pt.trace.json.gz"  # left alone


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("kind, mode, extra, words", [
    (None, None, ["--engine", "sglang"], "no sglang server answers"),
    ("sglang", "refuse", ["--engine", "sglang"], "the sglang server refused (HTTP 500"),
    ("sglang", "no-trace", ["--engine", "sglang", "--wait", "2"], "wrote no trace into"),
    ("vllm", "no-profiler", ["--engine", "vllm", "--seconds", "0.1"], "404: this vLLM server has no profiler"),
    ("vllm", "ok", ["--engine", "vllm", "--steps", "3"], "vLLM's /start_profile takes no step count"),
    ("sglang", "ok", ["--engine", "sglang", "--steps", "0"], "--steps 0: expected a positive number"),
])
def test_a_server_that_is_not_there_refuses_or_writes_nothing_is_one_line(engine, tmp_path, monkeypatch, capsys,
                                                                         kind, mode, extra, words):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "vdir").mkdir()
    url = f"http://127.0.0.1:{free_port()}" if kind is None else engine(kind, mode, tmp_path / "vdir")
    code = main(["triage", "--live", url, "--trace-dir", str(tmp_path / "vdir"), *extra])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("rocm-perf: error: ") and words in err and "\n" not in err, err


def test_triage_takes_a_profile_or_live_not_both(capsys):
    assert main(["triage", str(FIXTURE), "--live", "http://127.0.0.1:1"]) == 2
    assert "give a profile or --live URL" in capsys.readouterr().err
    assert main(["triage", "--live", "ftp://host"]) == 2
    assert "expected the engine's http:// or https:// address" in capsys.readouterr().err


def test_a_trace_is_complete_only_once_written_to_its_end_and_a_plain_copy_of_a_gz_is_dropped(tmp_path):
    from rocm_perf.agents.live_engines import _final, complete, wait_for_traces

    data = FIXTURE.read_bytes()
    half = tmp_path / "rank0.1.pt.trace.json.gz"
    half.write_bytes(data[: len(data) // 2])
    assert not complete(half)
    half.write_bytes(data)
    assert complete(half)
    plain = tmp_path / "rank1.2.pt.trace.json"
    plain.write_text('{"traceEvents": [')
    assert not complete(plain)
    plain.write_text('{"traceEvents": []}')
    assert complete(plain)
    (tmp_path / "rank1.2.pt.trace.json.gz").write_bytes(data)  # a writer that compressed the plain one afterwards
    assert [p.name for p in _final(sorted(tmp_path.iterdir()))] == ["rank0.1.pt.trace.json.gz", "rank1.2.pt.trace.json.gz"]
    clock = iter(range(0, 1000, 1))
    assert wait_for_traces(tmp_path, {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in tmp_path.iterdir()},
                           deadline=5, clock=lambda: next(clock), sleep=lambda s: None) == []  # nothing new: none
