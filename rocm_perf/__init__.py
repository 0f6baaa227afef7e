"""rocm-perf: closed-loop kernel optimization for AMD GPUs."""

__version__ = "0.1.0"
