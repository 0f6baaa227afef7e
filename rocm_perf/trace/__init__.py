"""Trace model and the profile formats (readers and the rocpd writer)."""

from rocm_perf.trace.model import UNKNOWN, Agent, ApiCalls, KernelSymbol, Markers, MemoryOps, Trace

__all__ = ["UNKNOWN", "Agent", "ApiCalls", "KernelSymbol", "Markers", "MemoryOps", "Trace"]
