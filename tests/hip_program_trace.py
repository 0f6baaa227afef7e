"""Hand-built traces for the critical-path tests: a HIP program's host calls, written in order.

`HipProgramTrace` records what a rocprofv3 trace of a single-threaded HIP program holds: a
dispatch per kernel launch (stream id = the small integer the test names, 0 = null stream) and the
HIP API calls with their stream/event pointer arguments, joined to dispatches by correlation id.
The host clock advances 1 us per call; a kernel starts when its launch call ends unless the test
says otherwise (the analysis orders work by the API calls, not by these times).
"""

from __future__ import annotations

import numpy as np

from rocm_perf.trace.model import UNKNOWN, ApiCalls, KernelSymbol, Trace


def stream_pointer(stream: int) -> int:
    """hipStream_t value of the test's stream id (0 is the null stream, as in HIP)."""
    return 0 if stream == 0 else 0x55D1C0A30000 + 0x100 * stream


def event_pointer(event: int) -> int:
    return 0x55D1C0A50000 + 0x10 * event


class HipProgramTrace:
    def __init__(self) -> None:
        self.now = 1_000_000
        self._calls: list[tuple[str, int, int, int, int, int]] = []  # name, start, end, corr, stream, event
        self._dispatches: list[tuple[str, int, int, int, int]] = []  # kernel, stream, start, end, corr
        self._corr = 0

    def _call(self, name: str, *, stream: int = UNKNOWN, event: int = UNKNOWN, length: int = 500) -> tuple[int, int]:
        self._corr += 1
        start = self.now
        self._calls.append((name, start, start + length, self._corr, stream, event))
        self.now = start + max(length, 500) + 500
        return self._corr, start + length

    def launch(self, kernel: str, stream: int, duration: int, *, start: int | None = None) -> int:
        """hipLaunchKernel on a stream; returns the launch's index (dispatch rows follow start order)."""
        corr, call_end = self._call("hipLaunchKernel", stream=stream_pointer(stream))
        begin = call_end + 100 if start is None else start
        self._dispatches.append((kernel, stream, begin, begin + duration, corr))
        return len(self._dispatches) - 1

    def launch_untraced(self, kernel: str, stream: int, duration: int) -> int:
        """A dispatch whose launch call the API trace lacks (its correlation id matches no call)."""
        begin = self.now + 100
        self._dispatches.append((kernel, stream, begin, begin + duration, 10**9 + len(self._dispatches)))
        return len(self._dispatches) - 1

    def record(self, event: int, stream: int) -> None:
        self._call("hipEventRecord", stream=stream_pointer(stream), event=event_pointer(event))

    def wait(self, stream: int, event: int) -> None:
        self._call("hipStreamWaitEvent", stream=stream_pointer(stream), event=event_pointer(event))

    def device_sync(self) -> None:
        self._call("hipDeviceSynchronize", length=2_000)

    def stream_sync(self, stream: int) -> None:
        self._call("hipStreamSynchronize", stream=stream_pointer(stream), length=2_000)

    def event_sync(self, event: int) -> None:
        self._call("hipEventSynchronize", event=event_pointer(event), length=2_000)

    def memcpy(self) -> None:
        """A blocking hipMemcpy (no stream argument: it runs on the null stream)."""
        self._call("hipMemcpy", length=2_000)

    def trace(self, *, with_api: bool = True) -> Trace:
        kernels = sorted({d[0] for d in self._dispatches})
        symbols = [KernelSymbol(f"_Z{len(k)}{k}v", k) for k in kernels]
        d = self._dispatches
        trace = Trace.from_rows(
            start=[x[2] for x in d],
            end=[x[3] for x in d],
            kernel=[kernels.index(x[0]) for x in d],
            symbols=symbols,
            stream=[x[1] for x in d],
            queue=[x[1] for x in d],
            corr=[x[4] for x in d],
        )
        if with_api:
            names = sorted({c[0] for c in self._calls})
            calls = self._calls
            trace.api = ApiCalls(
                names,
                np.array([names.index(c[0]) for c in calls], dtype=np.int32),
                np.array([c[1] for c in calls], dtype=np.int64),
                np.array([c[2] for c in calls], dtype=np.int64),
                np.zeros(len(calls), dtype=np.int64),
                np.array([c[3] for c in calls], dtype=np.int64),
                np.array([c[4] for c in calls], dtype=np.int64),
                np.array([c[5] for c in calls], dtype=np.int64),
            )
        trace.metadata["api_trace"] = with_api
        return trace

    def row_of(self, trace: Trace, launch_index: int) -> int:
        """The trace row of the n-th launch (rows are sorted by start)."""
        corr = self._dispatches[launch_index][4]
        return int(np.flatnonzero(trace.corr == corr)[0])
