"""What of a profile a command uses, so that a reader of a large profile can leave the rest unread.

`load_trace(path, needs=...)`. Every reader may ignore this and read everything (the small
formats do); the rocpd reader, where 10M dispatches make each column cost seconds, skips what
is not needed:

- dispatch `shapes`: grid, workgroup and per-dispatch LDS; when unread, `grid` and `workgroup`
  are read-only (n, 3) arrays of UNKNOWN (-1, "the trace does not say") and `lds_bytes` is None;
- `queues`: the queue column; unread, it is UNKNOWN wherever the dispatch has a stream id (the
  DAG's chains are streams then); read anyway for dispatches without one;
- `threads`: the launching host thread of dispatches and API calls (None / UNKNOWN when unread);
- `counters`, `markers`, `copies`: as their Trace fields (empty / None when unread);
- `api_args`: every argument of every API call as text (`ApiCalls.args`); the stream and event
  pointers that order work are always read.

What was left unread is listed in `trace.metadata["not_read"]`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class ProfileNeeds:
    shapes: bool = True
    queues: bool = True
    threads: bool = True
    counters: bool = True
    markers: bool = True
    copies: bool = True
    api_args: bool = True

    def skipped(self) -> list[str]:
        return [f.name for f in fields(self) if not getattr(self, f.name)]


EVERYTHING = ProfileNeeds()
# critical-path: the dispatch timeline and the API calls that order it, nothing else.
TIMELINE = ProfileNeeds(shapes=False, queues=False, threads=False, counters=False, markers=False, copies=False,
                        api_args=False)
# summary: the timeline and the markers (its hint counts ranges); --by-phase also the threads.
SUMMARY = ProfileNeeds(shapes=False, queues=False, threads=False, counters=False, markers=True, copies=False,
                       api_args=False)
SUMMARY_BY_PHASE = ProfileNeeds(shapes=False, queues=False, threads=True, counters=False, markers=True,
                                copies=False, api_args=False)
