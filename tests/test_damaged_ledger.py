"""A ledger damaged on disk (truncated, a page overwritten, emptied): `review`, `report`, `apply`,
`optimize --resume`, `status` and `sweep --resume` each give one line and leave the file byte for
byte as it was (sqlite_db.LedgerDB checks a file read-only before anything may write to it).

The run ledger is a real run's (tests/data/programs/unroll_wins.cu optimized on the host backend,
quick options); the sweep ledger is written by the sweep's own ledger class. Each damage is tried
on a fresh copy.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from conftest import DATA
from faults import QUICK, cli
from rocm_perf.cli import main
from rocm_perf.sweep.ledger import SweepLedger

PAGE = 4096


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("run")
    src = root / "src" / "unroll_wins.cu"
    src.parent.mkdir()
    shutil.copy(DATA / "programs" / "unroll_wins.cu", src)
    done = cli("optimize", str(src), "--out", str(root / "runs"), *QUICK)
    assert done.returncode == 0, done.stderr[-2000:]
    (ledger,) = (root / "runs").glob("*/ledger.db")
    return ledger.parent


def damages(size: int) -> list[str]:
    return ["empty", "header", "half", "mid-page"] + [f"page {n}" for n in range(1, size // PAGE)]


def damage(db: Path, how: str) -> None:
    data = bytearray(db.read_bytes())
    if how == "empty":
        data = bytearray()
    elif how == "header":
        data[:100] = b"\xd2" * 100
    elif how == "half":
        data = data[: len(data) // 2]
    elif how == "mid-page":
        data = data[: 3 * PAGE + 1234]
    else:
        n = int(how.split()[1])
        data[n * PAGE:(n + 1) * PAGE] = b"\xd2" * PAGE
    db.write_bytes(bytes(data))


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _one_line(capsys, argv: list[str]) -> str:
    code = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and len(err) == 1 and err[0].startswith("rocm-perf: error: "), (argv, code, err)
    return err[0]


pytestmark = pytest.mark.slow


@pytest.mark.long
def test_a_damaged_run_ledger_gets_one_line_from_every_command_and_is_left_as_it_was(finished_run, tmp_path, capsys):
    size = (finished_run / "ledger.db").stat().st_size
    assert size > 8 * PAGE  # several pages: the rounds, trials and builds tables each have their own
    for how in damages(size):
        copy = tmp_path / how.replace(" ", "-") / "run"
        shutil.copytree(finished_run, copy)
        for extra in ("ledger.db-wal", "ledger.db-shm"):
            (copy / extra).unlink(missing_ok=True)
        db = copy / "ledger.db"
        damage(db, how)
        before = _sha(db)
        for argv in (["review", str(copy)], ["report", str(copy)], ["apply", str(copy)],
                     ["optimize", "--resume", str(copy), "--quiet"]):
            line = _one_line(capsys, [*argv, "--out", str(copy.parent)])
            assert str(db) in line and ("damaged" in line or "not a rocm-perf" in line), (how, line)
        assert main(["review", "--out", str(copy.parent)]) == 0  # the list names it unreadable, and goes on
        assert "unreadable" in capsys.readouterr().out
        assert _sha(db) == before, f"{how}: the ledger changed"
        wal = copy / "ledger.db-wal"  # a read-only look may leave an empty log beside it: no data
        assert not wal.exists() or wal.stat().st_size == 0


def test_a_damaged_sweep_ledger_gets_one_line_from_status_report_and_resume(tmp_path, capsys):
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    ledger = SweepLedger(sweep, create=True)
    for i in range(40):  # enough rows for several pages
        ledger.add_target(f"t{i}", f"target{i}", {"source": str(tmp_path / f"k{i}.cu"), "note": "x" * 200}, "0" * 64)
    ledger.close()
    for extra in ("sweep.db-wal", "sweep.db-shm"):
        (sweep / extra).unlink(missing_ok=True)
    size = (sweep / "sweep.db").stat().st_size
    for how in damages(size):
        copy = tmp_path / how.replace(" ", "-")
        shutil.copytree(sweep, copy)
        db = copy / "sweep.db"
        damage(db, how)
        before = _sha(db)
        for argv in (["status", str(copy)], ["report", str(copy)], ["sweep", "--resume", str(copy)]):
            line = _one_line(capsys, argv)
            assert str(db) in line or str(copy) in line, (how, line)
        assert _sha(db) == before, f"{how}: the sweep ledger changed"
