"""Counter formulas: small arithmetic expressions over counters, written as data (analysis/arch/*.toml).

A formula is `+ - * /`, numbers and parentheses over names: UPPER_CASE names are counters, lower_case
names are device figures (`wave_size`, `lds_banks_per_cu`). Parsing goes through Python's `ast` and
accepts nothing else, so a data file cannot run code. Evaluation is over numpy columns, one value
per dispatch; a dispatch that lacks one of the counters gets NaN.
"""

from __future__ import annotations

import ast
import functools
import operator
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from rocm_perf.errors import RocmPerfError

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


@dataclass(frozen=True)
class Formula:
    """One named quantity of an architecture: how to compute it, what it is measured against, whence."""

    key: str  # "hbm", "valu_f32", "waves", ...
    expr: str
    source: str
    peak: str | None = None  # the peak rate it is compared with ("hbm", "mfma_f16"), None for other inputs
    optional: bool = False  # not in every ROCm's counter set: absent is noted, not counted as missing
    integer: bool = False  # integer ops: reported, not in the FLOP total

    @property
    def counters(self) -> tuple[str, ...]:
        return tuple(sorted({n for n in _names(self.tree) if not n.islower()}))

    @property
    def params(self) -> tuple[str, ...]:
        return tuple(sorted({n for n in _names(self.tree) if n.islower()}))

    @property
    def tree(self) -> ast.expr:
        return parse_formula(self.expr, self.key)


@functools.lru_cache(maxsize=None)
def parse_formula(expr: str, key: str = "") -> ast.expr:
    """The expression's tree; RocmPerfError for anything but arithmetic over names and numbers."""
    try:
        tree = ast.parse(expr, mode="eval").body
    except SyntaxError as e:
        raise RocmPerfError(f"counter formula {key!r} is not an expression: {expr!r} ({e.msg})") from None
    for node in ast.walk(tree):
        allowed = (
            isinstance(node, (ast.BinOp, ast.Name, ast.Load))
            or (isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)))
            or (isinstance(node, ast.Constant) and isinstance(node.value, (int, float)))
            or type(node) in _OPS
            or isinstance(node, (ast.USub, ast.UAdd))
        )
        if not allowed or (isinstance(node, ast.BinOp) and type(node.op) not in _OPS):
            raise RocmPerfError(f"counter formula {key!r}: only + - * / over names and numbers allowed: {expr!r}")
    return tree


def _names(tree: ast.expr) -> list[str]:
    return [n.id for n in ast.walk(tree) if isinstance(n, ast.Name)]


def counter_column(counters: Mapping[str, np.ndarray], name: str) -> np.ndarray | None:
    """A counter's column by name; `X_sum` and `X` stand for each other, because rocprofv3 reports a
    counter summed over its instances under its plain name and rocprof-compute writes that sum as `X_sum`."""
    if name in counters:
        return counters[name]
    other = name[: -len("_sum")] if name.endswith("_sum") else f"{name}_sum"
    return counters.get(other)


def evaluate(formula: Formula, counters: Mapping[str, np.ndarray], params: Mapping[str, float], rows: int) -> np.ndarray | None:
    """The formula per dispatch (float64, NaN where a counter is NaN); None when a counter is absent altogether."""
    columns = {}
    for name in formula.counters:
        column = counter_column(counters, name)
        if column is None:
            return None
        columns[name] = np.asarray(column, dtype=np.float64)
    for name in formula.params:
        if name not in params:
            raise RocmPerfError(f"counter formula {formula.key!r} needs the device figure {name!r}, which is unknown")

    def walk(node: ast.expr):
        if isinstance(node, ast.BinOp):
            left, right = walk(node.left), walk(node.right)
            if isinstance(node.op, ast.Div):
                with np.errstate(divide="ignore", invalid="ignore"):
                    return np.divide(left, right)
            return _OPS[type(node.op)](left, right)
        if isinstance(node, ast.UnaryOp):
            value = walk(node.operand)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.Constant):
            return float(node.value)
        name = node.id
        return columns[name] if name in columns else float(params[name])

    value = walk(formula.tree)
    return np.broadcast_to(np.asarray(value, dtype=np.float64), (rows,)).copy()


def missing_counters(formula: Formula, counters: Mapping[str, np.ndarray]) -> list[str]:
    """The formula's counters the profile lacks altogether, or has as NaN for every dispatch."""
    missing = []
    for name in formula.counters:
        column = counter_column(counters, name)
        if column is None or not np.isfinite(np.asarray(column, dtype=np.float64)).any():
            missing.append(name)
    return missing
