"""Human-readable durations, shared by the reports and the sweep's terminal output (no heavy imports)."""

from __future__ import annotations


def duration(seconds: float | None) -> str:
    """45s, 3m07s, 2h05m; "n/a" for None."""
    if seconds is None:
        return "n/a"
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m" if h else (f"{m}m{s:02d}s" if m else f"{s}s")
