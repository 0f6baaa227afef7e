"""How close a candidate's outputs must be to the baseline's: `--tolerance rtol=R,atol=A` parsed.

Base, not optimize: a reproducer's harness takes a tolerance too (reproducer.replay_args), and the
optimizer's comparison of outputs (optimize/output_tolerance.py) is built on it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rocm_perf.errors import RocmPerfError

BIT_IDENTICAL = "bit-identical"
ELEMENT_TYPES = {"float32": np.float32, "float64": np.float64, "float16": np.float16, "bfloat16": np.uint16,
                 "int8": np.int8, "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16, "int32": np.int32,
                 "uint32": np.uint32, "int64": np.int64, "uint64": np.uint64}
FLOAT_TYPES = ("float32", "float64", "float16", "bfloat16")


@dataclass(frozen=True)
class Tolerance:
    """How close a candidate's outputs must be to the baseline's, and the element type of a copy
    whose destination's type is not known."""

    rtol: float
    atol: float
    element: str = "float32"

    @property
    def spec(self) -> str:
        """How GuardSet.outputs and the reports say it: `rtol=1e-05,atol=1e-08`."""
        return f"rtol={self.rtol:g},atol={self.atol:g}"

    def close(self, candidate: float, reference: float) -> bool:
        if math.isnan(reference) or math.isnan(candidate):
            return math.isnan(reference) and math.isnan(candidate)
        if math.isinf(reference) or math.isinf(candidate):
            return candidate == reference
        return abs(candidate - reference) <= self.atol + self.rtol * abs(reference)


def parse_tolerance(text: str, element: str = "float32") -> Tolerance:
    """`rtol=R,atol=A` (either may be left out: 0) as a Tolerance; RocmPerfError on anything else."""
    if element not in ELEMENT_TYPES:
        raise RocmPerfError(f"--tolerance-type {element!r}: choose one of {', '.join(ELEMENT_TYPES)}")
    values = {"rtol": 0.0, "atol": 0.0}
    for part in [p.strip() for p in str(text).split(",") if p.strip()]:
        key, sep, value = part.partition("=")
        if not sep or key.strip() not in values:
            raise RocmPerfError(f"--tolerance {text!r}: expected rtol=R,atol=A (e.g. rtol=1e-5,atol=1e-8)")
        try:
            number = float(value)
        except ValueError as e:
            raise RocmPerfError(f"--tolerance {text!r}: {value.strip()!r} is not a number") from e
        if not number >= 0 or math.isinf(number):
            raise RocmPerfError(f"--tolerance {text!r}: {key.strip()} must be a finite number >= 0")
        values[key.strip()] = number
    if not values["rtol"] and not values["atol"]:
        raise RocmPerfError(f"--tolerance {text!r}: give rtol or atol above 0 (without a tolerance outputs are "
                            "compared bit for bit)")
    return Tolerance(values["rtol"], values["atol"], element)
