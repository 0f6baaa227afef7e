"""`rocm-perf apply`: only onto the file the run started from, atomically, with a backup; or a patch."""

import shutil
import subprocess

import pytest

from rocm_perf.errors import RocmPerfError
from rocm_perf.optimize.apply import run_apply
from rocm_perf.optimize.ledger import Baseline, open_ledger
from rocm_perf.optimize.run_context import sha256_bytes

ORIGINAL = b"__global__ void k(float* p, int n) {\n    for (int i = 0; i < n; ++i) p[i] += 1.0f;\n}\n"
STEP1 = ORIGINAL.replace(b"    for", b"    #pragma unroll 4\n    for")
STEP2 = STEP1.replace(b"+= 1.0f", b"+= 1.0f /* two */")


def make_run(tmp_path, user_file):
    """A finished run's ledger and files, as the loop leaves them: two accepted trials."""
    run = tmp_path / "runs" / "20260101-000000-k"
    ledger = open_ledger(run, create=True)
    for rel, data in (("baseline/source.cu", ORIGINAL), ("trials/3/source.cu", STEP1), ("trials/5/source.cu", STEP2)):
        (run / rel).parent.mkdir(parents=True, exist_ok=True)
        (run / rel).write_bytes(data)
    ledger.set("source_path", str(user_file))
    ledger.set("source_sha256", sha256_bytes(ORIGINAL))
    ledger.add_baseline(Baseline(0, None, sha256_bytes(ORIGINAL), "baseline/source.cu", "baseline/build/k", {}))
    ledger.add_baseline(Baseline(1, 3, sha256_bytes(STEP1), "trials/3/source.cu", "trials/3/build/k", {}))
    ledger.add_baseline(Baseline(2, 5, sha256_bytes(STEP2), "trials/5/source.cu", "trials/5/build/k", {}))
    ledger.close()
    return run


@pytest.fixture
def user_file(tmp_path):
    f = tmp_path / "proj" / "k.cu"
    f.parent.mkdir()
    f.write_bytes(ORIGINAL)
    f.chmod(0o640)
    return f


def test_apply_writes_all_accepted_changes_with_a_backup_and_keeps_the_mode(tmp_path, user_file, capsys):
    run = make_run(tmp_path, user_file)
    assert run_apply(run, out_root=tmp_path / "runs") == 0
    assert user_file.read_bytes() == STEP2
    assert oct(user_file.stat().st_mode & 0o777) == "0o640"
    backup = user_file.with_name(f"k.cu.{run.name}.orig")
    assert backup.read_bytes() == ORIGINAL
    assert not [p for p in user_file.parent.iterdir() if ".tmp" in p.name]  # no temp file left
    assert "up to trial 5" in capsys.readouterr().out
    assert run_apply(run, out_root=tmp_path / "runs") == 0  # idempotent
    assert "already holds" in capsys.readouterr().out


def test_apply_up_to_one_trial_by_name_under_the_runs_root(tmp_path, user_file):
    run = make_run(tmp_path, user_file)
    assert run_apply(run.name, trial="3", out_root=tmp_path / "runs") == 0
    assert user_file.read_bytes() == STEP1
    with pytest.raises(RocmPerfError, match="trial 4 was not accepted"):
        run_apply(run, trial="4", out_root=tmp_path / "runs")


def test_apply_refuses_a_changed_file_and_the_patch_applies_with_git(tmp_path, user_file, capsys, monkeypatch):
    run = make_run(tmp_path, user_file)
    user_file.write_bytes(ORIGINAL + b"// my own edit\n")
    with pytest.raises(RocmPerfError, match="changed since the run started.*--patch"):
        run_apply(run, out_root=tmp_path / "runs")
    assert user_file.read_bytes() == ORIGINAL + b"// my own edit\n"
    assert not list(user_file.parent.glob("*.orig"))

    monkeypatch.chdir(user_file.parent)
    assert run_apply(run, patch=True, out_root=tmp_path / "runs") == 0
    patch = capsys.readouterr().out
    assert patch.startswith("--- a/k.cu\n+++ b/k.cu\n")
    if shutil.which("git") is None:
        pytest.skip("git not installed: the patch was not applied")
    (user_file.parent / "change.patch").write_text(patch)
    done = subprocess.run(["git", "apply", "change.patch"], cwd=user_file.parent, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert user_file.read_bytes() == STEP2 + b"// my own edit\n"


def test_unknown_run_is_a_clear_error(tmp_path):
    with pytest.raises(RocmPerfError, match="no such run"):
        run_apply(tmp_path / "nope", out_root=tmp_path)
