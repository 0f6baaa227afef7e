"""Splitting a counter set into profiler passes by the hardware's per-block limits.

Per-pass limits per block (FORMATS.md "rocprofv3 command line"): SQ 8, TCP 4, TCC 4, SPI 6,
TA/TD/CPC/CPF/GRBM 2 counters. A counter's block is its name up to the first underscore. The
profiler replays the program once per pass.
"""

from __future__ import annotations

BLOCK_LIMITS = {"SQ": 8, "TCP": 4, "TCC": 4, "SPI": 6, "TA": 2, "TD": 2, "CPC": 2, "CPF": 2, "GRBM": 2}
# A counter whose block we do not know gets a pass slot of its own kind, one at a time: safe.
UNKNOWN_BLOCK_LIMIT = 1


def counter_block(counter: str) -> str:
    """The hardware block a counter belongs to: its name up to the first underscore (SQ_WAVES -> SQ)."""
    return counter.split("_", 1)[0].upper()


def plan_passes(counters: list[str]) -> list[list[str]]:
    """Split counters into passes, each within every block's limit; first fit, order kept, duplicates dropped."""
    passes: list[list[str]] = []
    used: list[dict[str, int]] = []
    for counter in dict.fromkeys(c.strip() for c in counters if c.strip()):
        block = counter_block(counter)
        limit = BLOCK_LIMITS.get(block, UNKNOWN_BLOCK_LIMIT)
        for p, counts in zip(passes, used):
            if counts.get(block, 0) < limit:
                p.append(counter)
                counts[block] = counts.get(block, 0) + 1
                break
        else:
            passes.append([counter])
            used.append({block: 1})
    return passes
