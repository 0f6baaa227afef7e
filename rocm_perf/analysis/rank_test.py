"""Two-sample tests on duration samples, and family-wise error control over many of them.

- Mann-Whitney U (Wilcoxon rank-sum), two-sided: does one kernel's per-dispatch duration differ
  between two profiles? Distribution-free, so a long tail of slow dispatches cannot fake or hide a
  shift the way a t-test on means can. Exact null distribution for small samples without ties
  (subset sums of ranks), otherwise the normal approximation with tie and continuity corrections.
- Holm's step-down adjustment: control the family-wise error over all kernels compared at once,
  the same guarantee the optimizer gives across a run's candidates (optimize/acceptance.py).
"""

from __future__ import annotations

import math

import numpy as np

EXACT_MAX_N = 50  # both samples together: the exact distribution costs O(n^3) here


def _ranks(values: np.ndarray) -> tuple[np.ndarray, bool]:
    """Mid-ranks (1-based) of values, and whether there were ties."""
    order = np.argsort(values, kind="mergesort")
    sorted_values = values[order]
    n = len(values)
    new_value = np.empty(n, dtype=bool)
    new_value[0] = True
    new_value[1:] = sorted_values[1:] != sorted_values[:-1]
    group = np.cumsum(new_value) - 1
    first = np.flatnonzero(new_value)
    last = np.append(first[1:] - 1, n - 1)
    mid = (first + last) / 2.0 + 1.0
    ranks = np.empty(n, dtype=float)
    ranks[order] = mid[group]
    return ranks, bool(len(first) < n)


def _exact_two_sided(u: float, n1: int, n2: int) -> float:
    """P(|U - n1 n2 / 2| >= |u - n1 n2 / 2|) under the null, counting rank subsets (no ties)."""
    n = n1 + n2
    max_sum = n1 * n2
    # ways[k][s]: subsets of size k of the ranks seen so far whose rank sum minus k(k+1)/2 is s
    ways = np.zeros((n1 + 1, max_sum + 1))
    ways[0, 0] = 1.0
    for item in range(1, n + 1):
        for k in range(min(item, n1), 0, -1):
            shift = item - k  # adding rank `item` as the k-th smallest chosen raises U by item - k
            if shift <= max_sum:
                ways[k, shift:] += ways[k - 1, : max_sum + 1 - shift]
    dist = ways[n1] / ways[n1].sum()
    centre = max_sum / 2.0
    far = np.abs(np.arange(max_sum + 1) - centre) >= abs(u - centre) - 1e-9
    return float(min(1.0, dist[far].sum()))


def mann_whitney(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided p-value that samples a and b come from the same distribution (1.0 when either is empty)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    n1, n2 = len(a), len(b)
    if n1 == 0 or n2 == 0:
        return 1.0
    ranks, ties = _ranks(np.concatenate([a, b]))
    u = float(ranks[:n1].sum() - n1 * (n1 + 1) / 2.0)
    if not ties and n1 + n2 <= EXACT_MAX_N:
        return _exact_two_sided(u, n1, n2)
    n = n1 + n2
    mean = n1 * n2 / 2.0
    # tie correction of the variance: sum over tie groups of t^3 - t
    _, counts = np.unique(ranks, return_counts=True)
    tie_term = float(((counts.astype(float) ** 3) - counts).sum())
    variance = n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1)))
    if variance <= 0:
        return 1.0  # every value equal
    z = (abs(u - mean) - 0.5) / math.sqrt(variance)
    return float(min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2.0))))


def holm_adjusted(p_values: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values: reject where adjusted p < alpha, family-wise error <= alpha."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted
