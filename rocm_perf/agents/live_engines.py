"""A profile of a running serving engine: start its PyTorch profiler over HTTP, wait for the trace
files it writes to be complete, and hand them to triage as any Kineto trace.

The engines' profiling APIs, as their documentation and source describe them:
- SGLang (docs/developer_guide/benchmark_and_profiling.md, "Profile a server with HTTP API
  endpoints"; python/sglang/srt/entrypoints/http_server.py `start_profile_async`): `POST
  /start_profile` with an optional JSON body (`output_dir`, `num_steps`, `start_step`,
  `activities` such as ["CPU", "GPU"], `merge_profiles`); with `num_steps` the profiler stops by
  itself after that many forward steps (python/sglang/profiler.py: "The API replies when all steps
  are processed and files are generated"), without it `POST /stop_profile` stops it. Traces are
  `{profile_id}-TP-{tp}[-DP-..-PP-..-EP-..].trace.json.gz` in `output_dir`. `GET /get_server_info`
  answers the server's arguments.
- vLLM (docs/contributing/profiling.md; vllm/entrypoints/serve/profile/api_router.py): `POST
  /start_profile` and `POST /stop_profile`, no body; the routes exist only when the server was
  started with a profiler (`--profiler-config '{"profiler": "torch", "torch_profiler_dir": DIR}'`
  from v0.13, the `VLLM_TORCH_PROFILER_DIR` environment variable before), else they answer 404.
  The stop call returns once the traces are flushed; torch's tensorboard_trace_handler names them
  `<worker>.<ms>.pt.trace.json[.gz]` in that folder. The API server's own CPU-only trace
  (`*.async_llm.*`, vllm/v1/engine/async_llm.py) holds no kernels and is left out. `GET /version`
  answers the version.

Everything that can go wrong (no server, a refusal, no trace within the wait) is one RocmPerfError
line after a bounded wait.
"""

from __future__ import annotations

import gzip
import json
import os
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from rocm_perf.errors import RocmPerfError

ENGINES = ("sglang", "vllm")
DEFAULT_STEPS = 5  # sglang.profiler's default --num-steps
DEFAULT_SECONDS = 10.0
DEFAULT_WAIT_S = 600.0  # vLLM's docs: flushing ~100 requests of a 70B model took about 10 minutes
POLL_S = 0.25
SETTLE_S = 2.0  # after the last complete file, how long to wait for other ranks' files (or a .gz of a .json)
TRACE_SUFFIXES = (".json", ".json.gz")
FRONTEND_TRACE = ".async_llm."  # vLLM's API-server CPU trace: no kernels


@dataclass
class LiveRequest:
    """What to profile and how long: `steps` (SGLang only) or `seconds` between start and stop."""

    url: str
    engine: str = "auto"
    steps: int | None = None
    seconds: float | None = None
    trace_dir: Path | None = None
    wait_s: float = DEFAULT_WAIT_S


@dataclass
class LiveCapture:
    """The new trace files of one profile and what was asked to make them."""

    engine: str
    url: str
    trace_dir: Path
    files: list[Path]
    settings: dict = field(default_factory=dict)
    server_info: dict | None = None

    def metadata(self) -> dict:
        """The keys profile_metadata.json records for a live profile."""
        return {"live_engine": self.engine, "live_url": self.url, "live_settings": self.settings,
                "live_trace_files": [str(p) for p in self.files]}


class Http:
    """POST and GET on the engine, each a one-line RocmPerfError on failure (no server, a refusal,
    no answer in time). A seam for tests that want to count calls; the default speaks HTTP."""

    def __init__(self, base: str):
        self.base = base

    def get_json(self, path: str, timeout: float, engine: str = "") -> dict | None:
        """GET base+path as JSON; None when the server answers but not with 200 and JSON."""
        try:
            with urllib.request.urlopen(self.base + path, timeout=timeout) as r:
                return json.loads(r.read().decode("utf-8", "replace") or "null")
        except urllib.error.HTTPError:
            return None
        except ValueError:
            return None
        except (urllib.error.URLError, OSError) as e:
            raise RocmPerfError(f"{self.base}: no {engine + ' ' if engine else ''}server answers ({_reason(e)})") from e

    def post(self, path: str, body: dict | None, timeout: float, engine: str) -> str:
        data = None if body is None else json.dumps(body).encode()
        headers = {} if body is None else {"Content-Type": "application/json"}
        req = urllib.request.Request(self.base + path, data=data or b"", headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as e:
            text = _first_line(e.read().decode("utf-8", "replace"))
            if e.code == 404 and engine == "vllm":
                raise RocmPerfError(
                    f"{self.base}{path}: 404: this vLLM server has no profiler; start it with --profiler-config "
                    "'{\"profiler\": \"torch\", \"torch_profiler_dir\": DIR}' (VLLM_TORCH_PROFILER_DIR=DIR before "
                    "v0.13)") from e
            raise RocmPerfError(f"{self.base}{path}: the {engine} server refused (HTTP {e.code}"
                                + (f": {text}" if text else "") + ")") from e
        except (socket.timeout, TimeoutError) as e:
            raise RocmPerfError(f"{self.base}{path}: no answer within {timeout:.0f} s") from e
        except (urllib.error.URLError, OSError) as e:
            raise RocmPerfError(f"{self.base}: no {engine} server answers ({_reason(e)})") from e


def _reason(e: Exception) -> str:
    reason = getattr(e, "reason", e)
    return str(getattr(reason, "strerror", None) or reason)


def _first_line(text: str, limit: int = 200) -> str:
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    return lines[0][:limit] if lines else ""


def base_url(url: str) -> str:
    """The engine's base URL without a trailing slash (RocmPerfError unless http or https)."""
    parsed = urllib.parse.urlparse(url.strip())
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise RocmPerfError(f"--live {url}: expected the engine's http:// or https:// address (e.g. http://127.0.0.1:30000)")
    return url.strip().rstrip("/")


def detect_engine(http: Http) -> str:
    """sglang when `GET /get_server_info` answers, vllm when `GET /version` does."""
    if http.get_json("/get_server_info", timeout=10) is not None:
        return "sglang"
    if isinstance(http.get_json("/version", timeout=10), dict):
        return "vllm"
    raise RocmPerfError(f"{http.base}: neither SGLang's /get_server_info nor vLLM's /version answers; pass --engine")


def check_request(req: LiveRequest) -> None:
    """The request's own consistency, before any call goes out."""
    if req.engine not in ("auto", *ENGINES):
        raise RocmPerfError(f"--engine {req.engine}: expected one of {', '.join(ENGINES)}")
    if req.steps is not None and req.seconds is not None:
        raise RocmPerfError("--steps and --seconds: give one (how many forward steps, or how long)")
    if req.steps is not None and req.steps < 1:
        raise RocmPerfError(f"--steps {req.steps}: expected a positive number of forward steps")
    if req.seconds is not None and req.seconds <= 0:
        raise RocmPerfError(f"--seconds {req.seconds:g}: expected a positive duration")
    if req.wait_s <= 0:
        raise RocmPerfError(f"--wait {req.wait_s:g}: expected a positive number of seconds")


def capture(req: LiveRequest, *, default_dir: Callable[[str], Path], http: Http | None = None,
            clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> LiveCapture:
    """Profile the engine at `req.url` and return its new, complete trace files.

    `default_dir(engine)` is where SGLang is asked to write when `req.trace_dir` is not given (vLLM
    writes where its own configuration says: `req.trace_dir`, else this process's
    VLLM_TORCH_PROFILER_DIR)."""
    check_request(req)
    http = http or Http(base_url(req.url))
    engine = detect_engine(http) if req.engine == "auto" else req.engine
    if engine == "vllm" and req.steps is not None:
        raise RocmPerfError("--steps: vLLM's /start_profile takes no step count; give --seconds (default "
                            f"{DEFAULT_SECONDS:g})")
    trace_dir = _trace_dir(engine, req.trace_dir, default_dir)
    before = _trace_files(trace_dir)
    server_info = http.get_json("/get_server_info" if engine == "sglang" else "/version", timeout=10, engine=engine)
    settings: dict = {"wait_s": req.wait_s}
    started = clock()
    if engine == "sglang" and req.seconds is None:
        steps = req.steps or DEFAULT_STEPS
        settings.update(num_steps=steps, activities=["CPU", "GPU"], output_dir=str(trace_dir))
        http.post("/start_profile", {"output_dir": str(trace_dir), "num_steps": steps, "activities": ["CPU", "GPU"]},
                  timeout=req.wait_s, engine=engine)
    else:
        seconds = req.seconds or DEFAULT_SECONDS
        settings["seconds"] = seconds
        body = None
        if engine == "sglang":
            body = {"output_dir": str(trace_dir), "activities": ["CPU", "GPU"]}
            settings.update(activities=body["activities"], output_dir=str(trace_dir))
        http.post("/start_profile", body, timeout=min(req.wait_s, 60.0), engine=engine)
        sleep(seconds)
        http.post("/stop_profile", None, timeout=max(1.0, req.wait_s - (clock() - started)), engine=engine)
    files = wait_for_traces(trace_dir, before, deadline=started + req.wait_s, clock=clock, sleep=sleep)
    if not files:
        raise RocmPerfError(
            f"{http.base}: the {engine} server took the profile request but wrote no trace into {trace_dir} within "
            f"{req.wait_s:.0f} s (is that the folder the engine writes to, on this machine? --trace-dir names it)")
    return LiveCapture(engine, http.base, trace_dir, files, settings, server_info if isinstance(server_info, dict) else None)


def _trace_dir(engine: str, given: Path | None, default_dir: Callable[[str], Path]) -> Path:
    if given is None and engine == "vllm":
        env = os.environ.get("VLLM_TORCH_PROFILER_DIR")
        if not env:
            raise RocmPerfError("--trace-dir: vLLM writes its traces where its --profiler-config torch_profiler_dir "
                                "(VLLM_TORCH_PROFILER_DIR before v0.13) says; name that folder")
        given = Path(env)
    folder = (given or default_dir(engine)).expanduser().resolve()
    if engine == "sglang":
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise RocmPerfError(f"{folder}: cannot create the trace folder ({e.strerror or e})") from e
    elif not folder.is_dir():
        raise RocmPerfError(f"{folder}: no such folder (vLLM's torch_profiler_dir, where it writes its traces)")
    return folder


def _trace_files(folder: Path) -> dict[Path, tuple[int, int]]:
    """Trace-looking files under `folder` with their (size, mtime_ns)."""
    found = {}
    for p in folder.rglob("*"):
        name = p.name.lower()
        if name.endswith(TRACE_SUFFIXES) and FRONTEND_TRACE not in name and p.is_file():
            try:
                st = p.stat()
            except OSError:
                continue  # renamed or removed while we looked
            found[p] = (st.st_size, st.st_mtime_ns)
    return found


def complete(path: Path) -> bool:
    """Whether a trace file has been written to its end: a gzip stream that ends with its trailer
    (and CRC), or JSON text that parses."""
    try:
        if path.name.lower().endswith(".gz"):
            with gzip.open(path, "rb") as f:
                while f.read(1 << 20):
                    pass
            return True
        json.loads(path.read_bytes())
        return True
    except (OSError, EOFError, zlib.error, ValueError):
        return False


def wait_for_traces(folder: Path, before: dict[Path, tuple[int, int]], *, deadline: float,
                    clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> list[Path]:
    """The files new (or rewritten) since `before`, once each is complete and no other has appeared
    for SETTLE_S (the other ranks' files); [] at the deadline."""
    done: list[Path] = []
    last_new = None
    while True:
        now = clock()
        current = _trace_files(folder)
        fresh = [p for p, stamp in current.items() if before.get(p) != stamp]
        pending = [p for p in fresh if p not in done]
        for p in sorted(pending):
            if complete(p):
                done.append(p)
                last_new = now
        if done and not [p for p in fresh if p not in done] and now - (last_new or now) >= SETTLE_S:
            return _final(done)
        if now >= deadline:
            return _final(done)
        sleep(POLL_S)


def _final(done: list[Path]) -> list[Path]:
    """The files still there, a `.json` dropped where its `.json.gz` was written after it (a writer
    that compresses once the plain trace is out would otherwise count every kernel twice)."""
    there = [p for p in done if p.exists()]
    names = {p.name for p in there}
    return sorted(p for p in there if not (p.name.lower().endswith(".json") and p.name + ".gz" in names))
