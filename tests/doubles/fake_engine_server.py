#!/usr/bin/env python3
"""TEST DOUBLE for the HTTP profiling API of SGLang and vLLM servers (the real engines need a GPU
and a model; the test machines have neither).

Follows the documented API (the sources rocm_perf/agents/live_engines.py cites):
  SGLang  GET /get_server_info -> the server's arguments (JSON).
          POST /start_profile, optional JSON body of the documented fields only (output_dir,
          num_steps, start_step, activities from CPU/GPU/MEM/RPD, merge_profiles, profile_by_stage,
          with_stack, record_shapes, profile_prefix); with num_steps the profile ends by itself,
          without it POST /stop_profile ends it. A second start while profiling is refused (400),
          as is a stop with nothing to stop. The trace is `<output_dir>/<profile_id>-TP-0.trace.json.gz`
          (output_dir defaults to SGLANG_TORCH_PROFILER_DIR, else /tmp, as the docs say).
  vLLM    GET /version -> {"version": ...}. POST /start_profile and POST /stop_profile, no body;
          the stop returns once the trace is flushed (the docs: "the engine client waits for this
          flush to complete") into the --trace-dir (its torch_profiler_dir) as
          `<worker>.<ms>.pt.trace.json.gz`, torch's tensorboard_trace_handler naming.
A request that breaks the contract (an unknown field, a mistyped value, a relative output_dir, a
body where none is taken, GET on a POST route) is answered 400 `contract violation: ...`.

The trace written is a real one: tests/data/torch-trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz
(a PyTorch profiler trace of a training step on MI250), byte for byte, written in two halves
--write-delay seconds apart (SGLang: after the answer, the harder of the two orders its sources
show; vLLM: before it) so that a reader must wait for the file to be complete.

Modes (--mode): ok | refuse (start answers 500 with an error body) | no-trace (everything answers
200, no file is ever written) | no-profiler (vLLM started without a profiler: the profile routes
answer 404).

Usage: fake_engine_server.py --engine sglang|vllm [--trace-dir DIR] [--mode M] [--write-delay S]
Prints `port N` on its first line, then serves on 127.0.0.1 until killed.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

FIXTURE = Path(__file__).resolve().parent.parent / "data" / "torch-trace" / "mi250_minitoy_train_ROCm6_2_kineto.json.gz"
SGLANG_FIELDS = {"output_dir": str, "num_steps": (int, str), "start_step": (int, str), "activities": list,
                 "merge_profiles": bool, "profile_by_stage": bool, "with_stack": bool, "record_shapes": bool,
                 "profile_prefix": str}
ACTIVITIES = {"CPU", "GPU", "MEM", "RPD"}


class Violation(Exception):
    pass


def write_slowly(path: Path, delay: float) -> None:
    data = FIXTURE.read_bytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.write(data[: len(data) // 2])
        f.flush()
        time.sleep(delay)
        f.write(data[len(data) // 2:])


class Engine:
    def __init__(self, kind: str, trace_dir: Path | None, mode: str, delay: float):
        self.kind, self.trace_dir, self.mode, self.delay = kind, trace_dir, mode, delay
        self.profiling: dict | None = None
        self.lock = threading.Lock()

    # ---- SGLang ----
    def sglang_start(self, body: dict | None) -> tuple[int, str]:
        body = body or {}
        for key, value in body.items():
            if key not in SGLANG_FIELDS:
                raise Violation(f"unknown field {key!r}")
            if not isinstance(value, SGLANG_FIELDS[key]) or isinstance(value, bool) and SGLANG_FIELDS[key] is not bool:
                raise Violation(f"{key}: {value!r} has the wrong type")
        if "num_steps" in body and not str(body["num_steps"]).isdigit():
            raise Violation(f"num_steps: {body['num_steps']!r} is not a number of steps")
        if not set(body.get("activities") or []) <= ACTIVITIES:
            raise Violation(f"activities: {body['activities']!r} (known: {sorted(ACTIVITIES)})")
        out = body.get("output_dir") or os.environ.get("SGLANG_TORCH_PROFILER_DIR") or str(self.trace_dir or "/tmp")
        if not os.path.isabs(out):
            raise Violation(f"output_dir {out!r} is relative: the server resolves it against its own folder")
        if self.mode == "refuse":
            return 500, json.dumps({"error": {"message": "profiler failed to start"}})
        with self.lock:
            if self.profiling is not None:
                return 400, "Profiling is already in progress. Call /stop_profile first.\n"
            self.profiling = {"dir": Path(out), "id": str(time.time())}
            if "num_steps" in body:  # ends by itself after the steps: write once they have run
                threading.Thread(target=self._finish, args=(0.3,), daemon=True).start()
        return 200, "Start profiling.\n"

    def sglang_stop(self) -> tuple[int, str]:
        with self.lock:
            if self.profiling is None:
                return 400, "Profiling is not in progress. Call /start_profile first.\n"
        threading.Thread(target=self._finish, args=(0.1,), daemon=True).start()
        return 200, "Stop profiling. This will take some time.\n"

    def _finish(self, after: float) -> None:
        time.sleep(after)
        with self.lock:
            prof, self.profiling = self.profiling, None
        if prof is not None and self.mode != "no-trace":
            write_slowly(prof["dir"] / f"{prof['id']}-TP-0.trace.json.gz", self.delay)

    # ---- vLLM ----
    def vllm_start(self, body: bytes) -> tuple[int, str]:
        if self.mode == "no-profiler":
            return 404, json.dumps({"detail": "Not Found"})
        if body:
            raise Violation("/start_profile takes no body")
        if self.mode == "refuse":
            return 500, json.dumps({"error": "profiler failed to start"})
        self.profiling = {"dir": self.trace_dir}
        return 200, ""

    def vllm_stop(self, body: bytes) -> tuple[int, str]:
        if self.mode == "no-profiler":
            return 404, json.dumps({"detail": "Not Found"})
        if body:
            raise Violation("/stop_profile takes no body")
        prof, self.profiling = self.profiling, None
        if prof is not None and self.mode != "no-trace":  # the stop returns once the trace is flushed
            write_slowly(Path(prof["dir"]) / f"fakehost_{os.getpid()}-rank0.{int(time.time() * 1000)}.pt.trace.json.gz",
                         self.delay)
        return 200, ""


def handler_for(engine: Engine):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet: the tests read our stdout for the port only
            pass

        def _send(self, code: int, text: str, content_type: str = "text/plain") -> None:
            data = text.encode()
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if engine.kind == "sglang" and self.path == "/get_server_info":
                return self._send(200, json.dumps({"model_path": "double/model", "tp_size": 1}), "application/json")
            if engine.kind == "vllm" and self.path == "/version":
                return self._send(200, json.dumps({"version": "0.13.0-double"}), "application/json")
            if self.path in ("/start_profile", "/stop_profile") and engine.kind == "vllm":
                return self._send(405, json.dumps({"detail": "Method Not Allowed"}), "application/json")
            self._send(404, json.dumps({"detail": "Not Found"}), "application/json")

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                if engine.kind == "sglang" and self.path in ("/start_profile", "/stop_profile"):
                    if self.path == "/stop_profile":
                        return self._send(*engine.sglang_stop())
                    try:
                        doc = json.loads(body) if body else None
                    except ValueError:
                        raise Violation("the body is not JSON")
                    if doc is not None and not isinstance(doc, dict):
                        raise Violation("the body is not a JSON object")
                    return self._send(*engine.sglang_start(doc))
                if engine.kind == "vllm" and self.path == "/start_profile":
                    return self._send(*engine.vllm_start(body))
                if engine.kind == "vllm" and self.path == "/stop_profile":
                    return self._send(*engine.vllm_stop(body))
            except Violation as e:
                return self._send(400, f"contract violation: {e}\n")
            self._send(404, json.dumps({"detail": "Not Found"}), "application/json")

    return Handler


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", choices=["sglang", "vllm"], required=True)
    ap.add_argument("--trace-dir", type=Path)
    ap.add_argument("--mode", choices=["ok", "refuse", "no-trace", "no-profiler"], default="ok")
    ap.add_argument("--write-delay", type=float, default=0.5)
    args = ap.parse_args()
    if args.engine == "vllm" and args.trace_dir is None:
        ap.error("--engine vllm needs --trace-dir (its torch_profiler_dir)")
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(Engine(args.engine, args.trace_dir, args.mode,
                                                                      args.write_delay)))
    print(f"port {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
