"""`rocm-perf triage --live URL` (and the MCP `triage` tool's `live`): profile a running SGLang or
vLLM server (live_engines.py), then triage the new traces exactly as `triage` triages any Kineto
trace, with the engine, the URL and the settings in profile_metadata.json.

Everything a live profile leaves is in one folder, `RUNS/live/<time>-<engine>/`: `traces/` (the
engine's new trace files, or links to them where the engine writes into a folder of its own),
`server_info.json` (what the engine says about itself) and triage's artifacts (unless --out says
elsewhere).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from rocm_perf.agents.live_engines import LiveCapture, LiveRequest, capture
from rocm_perf.atomic_file import write_atomic
from rocm_perf.errors import RocmPerfError
from rocm_perf.report.triage_report import run_triage, triage_document, triage_profile, write_triage


def _new_capture_dir(runs_root: Path, engine: str) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    folder, n = Path(runs_root) / "live" / f"{stamp}-{engine}", 1
    while folder.exists():
        n += 1
        folder = Path(runs_root) / "live" / f"{stamp}-{engine}-{n}"
    return folder


def capture_live(req: LiveRequest, runs_root: Path) -> tuple[Path, LiveCapture]:
    """Profile the engine; return the capture folder (its `traces/` holds exactly the new traces)
    and what was captured."""
    made: dict[str, Path] = {}

    def default_dir(engine: str) -> Path:
        made["dir"] = _new_capture_dir(runs_root, engine)
        return made["dir"] / "traces"

    live = capture(req, default_dir=default_dir)
    folder = made.get("dir") or _new_capture_dir(runs_root, live.engine)
    traces = folder / "traces"
    if live.trace_dir != traces.resolve():  # the engine's own folder: link the new files, leave its others alone
        try:
            traces.mkdir(parents=True, exist_ok=True)
            unique = len({f.name for f in live.files}) == len(live.files)  # else two ranks' subfolders, one name
            for n, f in enumerate(live.files):
                (traces / (f.name if unique else f"{n}-{f.name}")).symlink_to(f)
        except OSError as e:
            raise RocmPerfError(f"{traces}: cannot link the new traces here ({e.strerror or e})") from e
    if live.server_info is not None:
        write_atomic(folder / "server_info.json", json.dumps(live.server_info, indent=2, default=str) + "\n")
    return folder, live


def _meta(live: LiveCapture, meta: dict[str, str] | None) -> dict:
    return {**(meta or {}), **live.metadata()}


def run_live_triage(req: LiveRequest, *, runs_root: Path, out: Path | None = None, expect_arch: str | None = None,
                    meta: dict[str, str] | None = None, top: int = 10, short_us: float = 10.0,
                    max_gap_us: float = 50.0, as_json: bool = False) -> int:
    """The CLI's `triage --live`: capture, then print and write as `triage` does (artifacts into
    the capture folder unless `out` is given)."""
    folder, live = capture_live(req, runs_root)
    print(f"rocm-perf: {live.engine} at {live.url}: {len(live.files)} trace file(s) in {folder / 'traces'}",
          file=sys.stderr)
    return run_triage(folder / "traces", out=out or folder, expect_arch=expect_arch, meta=_meta(live, meta), top=top,
                      short_us=short_us, max_gap_us=max_gap_us, as_json=as_json)


def live_triage_document(req: LiveRequest, *, runs_root: Path, expect_arch: str | None = None, top: int = 10,
                         short_us: float = 10.0, max_gap_us: float = 50.0) -> dict:
    """`triage --live --json` as data (the MCP `triage` tool with `live`), with `capture_dir`: the
    artifacts are written there as the CLI writes them."""
    folder, live = capture_live(req, runs_root)
    t = triage_profile(folder / "traces", expect_arch=expect_arch, meta=_meta(live, None), top=top, short_us=short_us,
                       max_gap_us=max_gap_us)
    write_triage(t, folder)
    return {**triage_document(t), "capture_dir": str(folder)}
