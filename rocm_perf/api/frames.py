"""pandas, optional: the Python API's tables are DataFrames when pandas is installed
(`pip install 'rocm-perf[pandas]'`), and a clear ImportError naming that command when not."""

from __future__ import annotations

from typing import Any

INSTALL_PANDAS = "pip install 'rocm-perf[pandas]'"


def pandas():
    """The pandas module; ImportError with the command that installs it."""
    try:
        import pandas as pd
    except ModuleNotFoundError as e:
        raise ImportError(f"rocm-perf's DataFrames need pandas: {INSTALL_PANDAS} (or pip install pandas)") from e
    return pd


def frame(rows: list[dict[str, Any]], columns: list[str]):
    """A DataFrame of `rows` with exactly `columns`, in that order (also when there are no rows).
    An integer column with missing values is pandas' nullable `Int64`, not float: a stream
    handle or a correlation id stays exact."""
    pd = pandas()
    table = pd.DataFrame([{c: r.get(c) for c in columns} for r in rows], columns=columns)
    for c in columns:
        values = [r.get(c) for r in rows]
        known = [v for v in values if v is not None]
        if known and len(known) < len(values) and all(isinstance(v, int) and not isinstance(v, bool) for v in known):
            table[c] = pd.array(values, dtype="Int64")
    return table
