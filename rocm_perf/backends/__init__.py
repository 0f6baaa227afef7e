"""Backends: `host` (C++ compiler + our HIP host runtime) and `rocm` (hipcc + rocprofv3)."""

from rocm_perf.backends.base import Backend, Program, ProfileResult

__all__ = ["Backend", "Program", "ProfileResult"]
