"""The host backend's per-dispatch clocks, as they travel in a Trace and in a rocpd database.

The host runtime (host_runtime/rocm_perf_host/dispatch_clocks.h) measures, per dispatch, what the
threads that ran its blocks spent on it. They are stored as counters (rocpd `rocpd_info_pmc` /
`rocpd_pmc_event`, the table rocprofv3 stores hardware counters in) on the host's CPU agent, so
they reach `Trace.counters` through every reader of rocpd; the names start with `HOST_` so that
no GPU counter formula (analysis/arch/*.toml) can ever mean them, and `analyze` refuses CPU
agents outright.
"""

from __future__ import annotations

# Thread CPU time (CLOCK_THREAD_CPUTIME_ID) summed over the block workers, in ns.
HOST_CPU_TIME_NS = "HOST_CPU_TIME_NS"
# Retired instructions and core cycles in user space (perf_event_open), summed likewise.
HOST_INSTRUCTIONS = "HOST_INSTRUCTIONS"
HOST_CYCLES = "HOST_CYCLES"
# The CPU time of the speed probe the stream's worker timed last before the dispatch, in ns: a
# fixed load-heavy loop whose time tracks the core's speed at that moment (dispatch_clocks.h).
HOST_PROBE_NS = "HOST_PROBE_NS"
HOST_CLOCKS = (HOST_CPU_TIME_NS, HOST_INSTRUCTIONS, HOST_CYCLES, HOST_PROBE_NS)

# What each means, for the rocpd `description` column and for reports.
DESCRIPTIONS = {
    HOST_CPU_TIME_NS: "CPU time of the threads that ran the dispatch's blocks (CLOCK_THREAD_CPUTIME_ID), ns",
    HOST_INSTRUCTIONS: "instructions retired in user space by the threads that ran the dispatch's blocks (perf_event_open)",
    HOST_CYCLES: "core cycles in user space of the threads that ran the dispatch's blocks (perf_event_open)",
    HOST_PROBE_NS: "CPU time of the speed probe (a fixed 9-point stencil over 32 KiB) timed last before the dispatch, ns",
}
