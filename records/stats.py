"""The report's statistics: a seeded percentile bootstrap and the unbiased pass@k estimator."""
from __future__ import annotations

from math import comb
from typing import Sequence

import numpy as np

BOOTSTRAP_SEED = 20261130
BOOTSTRAP_RESAMPLES = 10000


def bootstrap_mean_ci(values: Sequence[float], *, level: float = 0.95, seed: int = BOOTSTRAP_SEED,
                      resamples: int = BOOTSTRAP_RESAMPLES) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the mean: ``resamples`` resamples with replacement.

    Seeded (PCG64), so the same values give the same interval on every run. None for no values.
    """
    data = np.asarray(list(values), dtype=np.float64)
    if data.size == 0:
        return None
    rng = np.random.Generator(np.random.PCG64(seed))
    means = data[rng.integers(0, data.size, size=(resamples, data.size))].mean(axis=1)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return float(low), float(high)


def pass_at_k(n: int, c: int, k: int) -> float | None:
    """Unbiased pass@k (Chen et al., 2021): 1 - C(n - c, k) / C(n, k); None when n < k."""
    if k < 1 or n < k:
        return None
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def mean_pass_at_k(per_task: Sequence[tuple[int, int]], k: int) -> tuple[float | None, int]:
    """Mean pass@k over the tasks with at least k attempts, and how many tasks that was."""
    values = [v for n, c in per_task if (v := pass_at_k(n, c, k)) is not None]
    if not values:
        return None, 0
    return sum(values) / len(values), len(values)
