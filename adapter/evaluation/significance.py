"""Is a difference between two techniques real? Paired tests over the same queries, corrected for
the number of comparisons. Pure (numpy and scipy).

- The paired randomization test (Fisher's; Smucker, Allan & Carterette 2007 recommend it for IR):
  under the null the two techniques' scores of a query are exchangeable, so each per-query
  difference keeps or flips its sign at random; the p-value is the share of sign patterns whose
  mean difference is at least as far from 0 as the observed one, two-sided as
  :func:`scipy.stats.permutation_test` computes it (``permutation_type="samples"``; exact when
  2^n patterns are no more than ``resamples``, else ``resamples`` random ones plus the observed).
  It is written here as one matrix product over every comparison at once: scipy's takes 0.15 s a
  comparison, 15-25 s for the ~100 of a 12-technique report on this machine, against 0.2 s
  (a unit test checks both give the same exact p-values).
- The paired t-test (two-sided), as :func:`scipy.stats.ttest_rel` computes it: ``t = mean(d) /
  (std(d, ddof=1) / sqrt(n))`` with the t distribution's tail from :func:`scipy.special.stdtr`
  (importing scipy.stats alone takes 1.3 s of CPU here, a tenth of the report's budget; a unit test
  checks the p-values equal ttest_rel's).
- Holm's step-down correction (Holm 1979) over every comparison of a family (one measure, one
  test): it bounds the chance of any false "significant" among them, as Bonferroni does, and
  rejects at least as much. scipy has Benjamini-Hochberg (a false discovery rate, a weaker promise)
  but not Holm, which is the few lines of :func:`holm`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Mapping, Sequence

import numpy as np

CORRECTION = "Holm-Bonferroni"
ALPHA = 0.05
RESAMPLES = 10_000
SEED = 20_250_101  # the randomization test's sign patterns: the same report twice gives the same p-values


@dataclass(frozen=True)
class Comparison:
    """``technique`` against ``baseline`` on one measure, over the same queries."""

    technique: str
    baseline: str
    measure: str
    delta: float  # mean of technique - baseline
    p_randomization: float
    p_t: float
    p_randomization_adjusted: float = 1.0
    p_t_adjusted: float = 1.0

    @property
    def significant(self) -> bool:
        """Both corrected tests below ALPHA."""
        return self.p_randomization_adjusted < ALPHA and self.p_t_adjusted < ALPHA


@lru_cache(maxsize=4)
def sign_patterns(n: int, *, resamples: int = RESAMPLES, seed: int = SEED) -> tuple[np.ndarray, bool]:
    """(patterns x n matrix of +-1, exact): every pattern when there are at most ``resamples``.
    The same for every comparison of a report (each measure's tests share them); read-only."""
    if n <= 20 and 2**n <= resamples:
        codes = np.arange(2**n)[:, None] >> np.arange(n)[None, :] & 1
        signs = (1 - 2 * codes).astype(np.float64)
        exact = True
    else:
        signs = 1.0 - 2.0 * np.random.default_rng(seed).integers(0, 2, size=(resamples, n)).astype(np.float64)
        exact = False
    signs.setflags(write=False)
    return signs, exact


def randomization_pvalues(differences: np.ndarray, *, resamples: int = RESAMPLES, seed: int = SEED) -> np.ndarray:
    """Two-sided paired randomization p-values, one per row of ``differences`` (comparisons x
    queries: technique - baseline per query), with scipy's formula."""
    diffs = np.atleast_2d(np.asarray(differences, dtype=np.float64))
    n = diffs.shape[1]
    signs, exact = sign_patterns(n, resamples=resamples, seed=seed)
    observed = diffs.mean(axis=1)
    null = diffs @ signs.T / n  # comparisons x patterns
    gamma = np.abs(observed)[:, None] * 1e-14 + 1e-14  # scipy's tolerance for ties with the observed value
    adjustment = 0 if exact else 1
    less = ((null <= observed[:, None] + gamma).sum(axis=1) + adjustment) / (signs.shape[0] + adjustment)
    greater = ((null >= observed[:, None] - gamma).sum(axis=1) + adjustment) / (signs.shape[0] + adjustment)
    out: np.ndarray = np.clip(2 * np.minimum(less, greater), 0.0, 1.0)
    return out


def paired_tests(
    a: Sequence[Sequence[float]], b: Sequence[Sequence[float]], *, resamples: int = RESAMPLES, seed: int = SEED
) -> list[tuple[float, float]]:
    """(randomization p, t-test p), two-sided, for each row pair of per-query scores ``a[i]`` and
    ``b[i]`` (the same queries in the same order). Identical rows give 1.0 for both (no evidence
    of a difference)."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 2:
        raise ValueError(f"paired scores need the same queries: {x.shape} vs {y.shape}")
    if x.shape[0] == 0:
        return []
    same = np.all(np.abs(x - y) <= 1e-12, axis=1) | (x.shape[1] < 2)
    p_rand = randomization_pvalues(x - y, resamples=resamples, seed=seed) if x.shape[1] else np.ones(len(x))
    p_t = paired_t_pvalues(x - y) if x.shape[1] >= 2 else np.ones(len(x))
    return [(1.0, 1.0) if s else (float(r), float(t)) for s, r, t in zip(same, p_rand, p_t)]


def paired_t_pvalues(differences: np.ndarray) -> np.ndarray:
    """Two-sided paired t-test p-values, one per row of per-query differences (scipy's ttest_rel);
    1.0 where the differences do not vary (no evidence either way)."""
    from scipy.special import stdtr

    d = np.atleast_2d(np.asarray(differences, dtype=np.float64))
    n = d.shape[1]
    mean, std = d.mean(axis=1), d.std(axis=1, ddof=1)
    flat = std <= 1e-12 * np.maximum(1.0, np.abs(mean))  # rounding noise, not spread: the test is undefined
    with np.errstate(divide="ignore", invalid="ignore"):
        p = 2.0 * stdtr(n - 1, -np.abs(mean / (std / np.sqrt(n))))
    out: np.ndarray = np.where(flat | np.isnan(p), 1.0, p)
    return out


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the input's order: the i-th smallest of m is multiplied by
    (m - i), made non-decreasing along that order, and capped at 1."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    running = 0.0
    for i, index in enumerate(order):
        running = max(running, min(1.0, (m - i) * pvalues[index]))
        adjusted[index] = running
    return adjusted


def compare(
    scores: Mapping[str, Mapping[str, Mapping[str, float]]], baselines: Sequence[str], *, resamples: int = RESAMPLES
) -> list[Comparison]:
    """Every technique against every baseline, on every measure of ``scores`` (``measure ->
    technique -> query id -> value``); p-values Holm-corrected within each measure and test over
    the distinct pairs compared (a pair of two baselines is tested once)."""
    out: list[Comparison] = []
    for measure, by_technique in scores.items():
        present = [b for b in baselines if b in by_technique]
        qids = list(by_technique[present[0]]) if present else []
        pairs: list[frozenset[str]] = []
        rows: list[tuple[str, str]] = []
        for baseline in present:
            for name in by_technique:
                if name != baseline:
                    rows.append((name, baseline))
                    if frozenset((name, baseline)) not in pairs:
                        pairs.append(frozenset((name, baseline)))
        ordered = [tuple(sorted(p)) for p in pairs]
        vectors = {name: [by_technique[name].get(q, 0.0) for q in qids] for name in by_technique}
        tested = paired_tests([vectors[a] for a, _ in ordered], [vectors[b] for _, b in ordered], resamples=resamples)
        result = dict(zip(pairs, tested))
        rand_adj = dict(zip(pairs, holm([result[p][0] for p in pairs])))
        t_adj = dict(zip(pairs, holm([result[p][1] for p in pairs])))
        for name, baseline in rows:
            key = frozenset((name, baseline))
            delta = float(np.mean(np.subtract(vectors[name], vectors[baseline]))) if qids else 0.0
            out.append(
                Comparison(name, baseline, measure, delta, result[key][0], result[key][1], rand_adj[key], t_adj[key])
            )
    return out
