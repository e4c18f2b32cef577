"""Statistics for evaluation: Wilson intervals, unbiased pass@k, McNemar's exact test.

Intervals and exact tests come from :mod:`scipy.stats` (``binomtest``); pass@k is
Chen et al.'s unbiased estimator on counts. Small evaluations (50 items) need
intervals that stay inside [0, 1] and exact paired tests, not normal approximations.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

CONFIDENCE = 0.95


def wilson_interval(successes: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion, inside [0, 1] and around ``successes / n``; (0, 1) when ``n`` is 0."""
    from scipy.stats import binomtest

    if n <= 0:
        return 0.0, 1.0
    if not 0 <= successes <= n:
        raise ValueError(f"successes must lie in 0..{n}, got {successes}")
    interval = binomtest(successes, n).proportion_ci(confidence_level=confidence, method="wilson")
    share = successes / n
    # Float rounding must not put an end on the wrong side of the estimate (a figure's error bar below 0).
    return min(share, max(0.0, float(interval.low))), max(share, min(1.0, float(interval.high)))


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``n`` samples with ``c`` correct (Chen et al. 2021): 1 - C(n-c, k) / C(n, k)."""
    if not 1 <= k <= n:
        raise ValueError(f"k must lie in 1..{n}, got {k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def mean_pass_at_k(correct_counts: Sequence[int], n: int, k: int) -> float:
    """pass@k averaged over items, each with ``n`` samples and ``correct_counts[i]`` correct."""
    if not correct_counts:
        return 0.0
    return sum(pass_at_k(n, c, k) for c in correct_counts) / len(correct_counts)


def mcnemar_exact(only_first: int, only_second: int) -> float:
    """Two-sided exact McNemar p-value from the discordant pair counts.

    ``only_first``: items the first system got right and the second wrong;
    ``only_second``: the reverse. Under the null each discordant item is a fair
    coin, so the p-value is scipy's two-sided exact binomial test at 1/2.
    """
    from scipy.stats import binomtest

    n = only_first + only_second
    if n == 0:
        return 1.0
    return min(1.0, float(binomtest(only_first, n, 0.5).pvalue))


def paired_counts(first: Sequence[bool], second: Sequence[bool]) -> tuple[int, int, int, int]:
    """(both right, only first, only second, both wrong) for per-item verdicts on the same items."""
    if len(first) != len(second):
        raise ValueError("paired verdicts must cover the same items")
    both = sum(a and b for a, b in zip(first, second, strict=True))
    only_first = sum(a and not b for a, b in zip(first, second, strict=True))
    only_second = sum(b and not a for a, b in zip(first, second, strict=True))
    return both, only_first, only_second, len(first) - both - only_first - only_second


def mean_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Student-t interval for the mean of per-item scores in [0, 1], clamped to [0, 1] and around the mean.

    (0, 1) without items or with one (no spread to estimate); the mean itself when every value is equal.
    """
    from scipy.stats import t

    n = len(values)
    if n < 2:
        return 0.0, 1.0
    mean = sum(values) / n
    spread = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    if spread == 0:
        return mean, mean
    low, high = t.interval(confidence, n - 1, loc=mean, scale=spread / math.sqrt(n))
    return max(0.0, min(mean, float(low))), min(1.0, max(mean, float(high)))


def paired_score_test(first: Sequence[float], second: Sequence[float]) -> float:
    """Two-sided Wilcoxon signed-rank p-value for per-item scores of two systems on the same items.

    Items where the scores are equal carry no information and are dropped (Wilcoxon's own rule); with no
    item left the p-value is 1.
    """
    from scipy.stats import wilcoxon

    if len(first) != len(second):
        raise ValueError("paired scores must cover the same items")
    differences = [b - a for a, b in zip(first, second, strict=True) if b != a]
    if not differences:
        return 1.0
    return float(wilcoxon(differences).pvalue)


def paired_difference_interval(
    both: int, only_first: int, only_second: int, neither: int, confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """95% interval for (second accuracy - first accuracy) on the same items: Newcombe's hybrid score method.

    Newcombe (1998), "Improved confidence intervals for the difference between binomial proportions based on
    paired data", method 10: Wilson intervals of the two accuracies, combined with the phi correlation of the
    paired verdicts. Stays inside [-1, 1] and behaves at 0 or n discordant items, where a Wald interval does not.
    """
    n = both + only_first + only_second + neither
    if n == 0:
        return -1.0, 1.0
    p1, p2 = (both + only_first) / n, (both + only_second) / n
    l1, u1 = wilson_interval(both + only_first, n, confidence)
    l2, u2 = wilson_interval(both + only_second, n, confidence)
    margins = (both + only_first) * (only_second + neither) * (both + only_second) * (only_first + neither)
    cross = both * neither - only_first * only_second
    cross = cross - n / 2 if cross > n / 2 else min(cross, 0)  # Newcombe's continuity-corrected phi
    phi = cross / math.sqrt(margins) if margins else 0.0
    diff = p2 - p1
    lower = math.sqrt(max(0.0, (p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2))
    upper = math.sqrt(max(0.0, (u2 - p2) ** 2 - 2 * phi * (u2 - p2) * (p1 - l1) + (p1 - l1) ** 2))
    return max(-1.0, diff - lower), min(1.0, diff + upper)
