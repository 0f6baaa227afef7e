"""rocm-perf's SQLite files, opened one way: the run ledger (optimize/ledger.py), the sweep ledger
(sweep/ledger.py) and the profile databases (trace/).

A ledger is the source of truth of work that may be killed at any moment (`LedgerDB`):

- Connection: WAL journal (readers never block the writer), synchronous=FULL (a committed write
  survives a power cut), a busy timeout (a second process waits for the lock instead of failing),
  foreign keys enforced, autocommit (each statement is committed when it returns).
- Commit first: the statements that record a transition go in one `with db.transaction():`
  (BEGIN IMMEDIATE ... COMMIT, rolled back if the block raises), and the caller starts the step
  only after the block. A kill at any moment leaves the ledger before the transition or after it.
- Schema versions: a `Schema` is the DDL of its newest version and the ordered migrations that
  bring an older file up to it, one version at a time, each committed with its version number in
  the `meta` table. A file newer than this rocm-perf knows is refused with one line.

A profile database is written once to a temporary file and renamed into place (`connect_bulk`:
no journal, no syncs) and otherwise only read (`connect_readonly`).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from rocm_perf.errors import RocmPerfError

BUSY_TIMEOUT_S = 30.0
VERSION_KEY = "schema_version"
# Every ledger has it: its schema version and whatever the ledger keeps as JSON key/value pairs.
META_DDL = "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
_LEDGER_PRAGMAS = ("PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL", "PRAGMA foreign_keys=ON")


@dataclass(frozen=True)
class Migration:
    """The statements that take a file from version `to_version - 1` to `to_version`."""

    to_version: int
    sql: str


@dataclass(frozen=True)
class Schema:
    """A ledger's tables: `create` builds the newest version in an empty file; `migrations`
    (in order, versions 2, 3, ...) bring an older file up to it. Version 1 needs no migration."""

    kind: str  # what the file is, for messages: "run ledger", "sweep ledger"
    create: str
    migrations: tuple[Migration, ...] = ()

    @property
    def version(self) -> int:
        return 1 + len(self.migrations)

    def __post_init__(self) -> None:
        steps = [m.to_version for m in self.migrations]
        if steps != list(range(2, 2 + len(steps))):
            raise ValueError(f"{self.kind}: migrations must go to versions 2, 3, ... in order, got {steps}")


class LedgerDB:
    """An open ledger: autocommitted writes, commit-first transactions, a JSON `meta` table.

    Opening with create=True makes a new file at the newest schema version; opening migrates an
    older file, and refuses a newer or a foreign one with a RocmPerfError.
    `threads=True` lets other threads use the connection (the caller serializes them).
    """

    def __init__(self, path: Path, schema: Schema, *, create: bool = False, threads: bool = False):
        self.path = Path(path)
        self.schema = schema
        self.db: sqlite3.Connection | None = None
        existed = self.path.exists()
        if existed:
            self._refuse_empty(create)
        try:
            self.db = sqlite3.connect(str(self.path), isolation_level=None, timeout=BUSY_TIMEOUT_S,
                                      check_same_thread=not threads)
            if existed and self.path.stat().st_size > 0:
                self._refuse_damaged()  # reads only: a damaged file is never written to
            for pragma in _LEDGER_PRAGMAS:
                self.db.execute(pragma)
            self._bring_up_to_date(create)
        except sqlite3.Error as e:
            self.close()
            raise self._open_error(e) from e
        except RocmPerfError:
            self.close()
            raise

    def close(self) -> None:
        if self.db is not None:
            self.db.close()

    # ---- the messages a subclass may word for its file ------------------------------------------

    def _unwritable(self, e: Exception) -> RocmPerfError:
        """A write failed (disk full, read-only file system, ...)."""
        return RocmPerfError(f"{self.path}: cannot write the {self.schema.kind} ({e}); free disk space")

    def _open_error(self, e: sqlite3.Error) -> RocmPerfError:
        """Opening failed: cannot write the file (OperationalError), or it is no ledger of ours."""
        if isinstance(e, sqlite3.OperationalError):
            return RocmPerfError(f"{self.path}: cannot write the {self.schema.kind} ({e})")
        return self._foreign(str(e))

    def _foreign(self, why: str) -> RocmPerfError:
        return RocmPerfError(f"{self.path}: not a rocm-perf {self.schema.kind} ({why})")

    def _damaged(self, why: str) -> RocmPerfError:
        return RocmPerfError(f"{self.path}: the {self.schema.kind} is damaged ({why}); it was left as it is: "
                             "restore it from a backup, or start afresh")

    def _refuse_empty(self, create: bool) -> None:
        """An empty file is no ledger (unless one is being created). Its size is all that is looked
        at: opening the file other than through SQLite, even to read its magic bytes, would drop the
        POSIX locks this process's other connections hold on it (closing any descriptor of a file
        releases them all), and a writer elsewhere could then truncate what they are reading."""
        if self.path.stat().st_size == 0 and not create:
            raise self._foreign("an empty file")

    def _refuse_damaged(self) -> None:
        """`PRAGMA quick_check` on the new connection before any pragma or statement may write: a file
        that is not SQLite's, that SQLite cannot read, or whose pages fail the check is refused whole
        and left as it is."""
        try:
            problems = [r[0] for r in self.db.execute("PRAGMA quick_check").fetchall()]
        except sqlite3.OperationalError as e:  # cannot read it at all (permissions, a lock held too long, ...)
            if "malformed" in str(e):
                raise self._damaged(str(e)) from e
            raise RocmPerfError(f"{self.path}: cannot read the {self.schema.kind} ({e})") from e
        except sqlite3.DatabaseError as e:  # "database disk image is malformed", a truncated file, ...
            if e.sqlite_errorname == "SQLITE_NOTADB":  # no SQLite header
                raise self._foreign("not a SQLite file, or its first page is overwritten") from e
            raise self._damaged(str(e)) from e
        if problems != ["ok"]:
            first = " ".join(line for line in problems[0].splitlines() if not line.startswith("***")) or problems[0]
            raise self._damaged(f"PRAGMA quick_check: {first.strip()[:120]}")

    # ---- writes ------------------------------------------------------------------------------

    def _write(self, sql: str, params: tuple = ()) -> sqlite3.Cursor:
        """One statement, committed (autocommit) unless inside a transaction; a failed write
        (disk full, read-only) becomes a clear error."""
        try:
            return self.db.execute(sql, params)
        except sqlite3.OperationalError as e:
            raise self._unwritable(e) from e

    def transaction(self) -> "Transaction":
        """`with ledger.transaction():` records a step's statements together, committed on exit."""
        return Transaction(self)

    def set(self, key: str, value: Any) -> None:
        self._write("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, json.dumps(value)))

    def get(self, key: str, default: Any = None) -> Any:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return default if row is None else json.loads(row[0])

    # ---- schema versions ---------------------------------------------------------------------

    def _stored_version(self) -> Any:
        """The file's schema version; None for a file without one (a new file)."""
        if self.db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone() is None:
            return None
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (VERSION_KEY,)).fetchone()
        try:
            return None if row is None else json.loads(row[0])
        except ValueError:
            return row[0]

    def _bring_up_to_date(self, create: bool) -> None:
        version = self._stored_version()
        if version == self.schema.version:
            return  # the usual case: reads only, so a reader never takes the write lock
        with self.transaction():  # one process creates or migrates; another waits, then finds it done
            version = self._stored_version()
            if version is None:
                if not create:
                    raise self._foreign("no schema version")
                self._run_script(META_DDL + "\n" + self.schema.create)
                self._write_version(self.schema.version)
                return
            if not isinstance(version, int) or isinstance(version, bool) or version < 1:
                raise self._foreign(f"schema version {version!r}")
            if version > self.schema.version:
                raise RocmPerfError(f"{self.path}: {self.schema.kind} schema {version} is newer than this rocm-perf "
                                    f"reads ({self.schema.version}); use the rocm-perf that wrote it, or a newer one")
            for m in self.schema.migrations[version - 1:]:
                try:
                    self._run_script(m.sql)
                except sqlite3.Error as e:
                    raise RocmPerfError(f"{self.path}: cannot migrate the {self.schema.kind} from schema "
                                        f"{m.to_version - 1} to {m.to_version} ({e}); the file is unchanged") from e
                self._write_version(m.to_version)

    def _write_version(self, version: int) -> None:
        self._write("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (VERSION_KEY, json.dumps(version)))

    def _run_script(self, sql: str) -> None:
        """Statements one by one inside the open transaction (executescript would commit it)."""
        for statement in split_statements(sql):
            self.db.execute(statement)


class Transaction:
    """BEGIN IMMEDIATE ... COMMIT, rolled back when the block raises."""

    def __init__(self, ledger: LedgerDB):
        self.ledger = ledger

    def __enter__(self) -> "Transaction":
        self.ledger._write("BEGIN IMMEDIATE")
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.ledger._write("COMMIT")
        else:
            self.ledger.db.execute("ROLLBACK")


def split_statements(sql: str) -> list[str]:
    """A script's statements; a `;` inside a string literal does not end one."""
    statements, buffer = [], ""
    for piece in sql.split(";"):
        buffer += piece + ";"
        if sqlite3.complete_statement(buffer):
            if buffer.strip(" \t\r\n;"):
                statements.append(buffer.strip())
            buffer = ""
    if buffer.strip(" \t\r\n;"):
        raise ValueError(f"incomplete SQL statement: {buffer.strip()[:80]}")
    return statements


# ---- profile databases ---------------------------------------------------------------------------

def connect_readonly(path: Path) -> sqlite3.Connection:
    """A read-only connection (nothing is created or changed, not even a journal)."""
    return sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True)


def connect_bulk(path: Path) -> sqlite3.Connection:
    """A connection for writing a new file in one go before renaming it into place: no journal and
    no syncs (a crash leaves only the temporary file, which the writer deletes)."""
    con = sqlite3.connect(str(path))
    con.execute("PRAGMA journal_mode=OFF")
    con.execute("PRAGMA synchronous=OFF")
    return con
