"""A part of `rocm-perf summary` that an analysis contributes (the critical path today; more to come).

Its own module so that the summary and each section's renderer can both import it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class SummarySection:
    """An extra part of the summary contributed by another analysis (e.g. the critical path).

    `data` goes into the JSON output under `key`; `markdown` into profile_summary.md; `text` is
    printed on the terminal; `files` are written into --out as JSON (name -> object).
    """

    key: str
    title: str
    data: Any  # a JSON object or list
    markdown: str
    text: str
    files: dict[str, Any] = field(default_factory=dict)
