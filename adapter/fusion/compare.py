"""Comparing fused runs: whether two lists agree up to the order of exactly tied scores. Pure."""

from __future__ import annotations

from adapter.fusion.base import Run


def same_ranking_up_to_ties(a: Run, b: Run, *, rel_tol: float = 1e-6) -> bool:
    """Whether two fused runs agree on every score and on the order of distinct scores.

    Documents with exactly equal fused scores (common with RRF: rank r in one leg only ties with
    rank r in the other leg only) may come in any order; the server does not specify its tie order.
    The last group of ties may be cut differently by the list length, so only its scores count.
    """
    if len(a) != len(b):
        return False
    if any(abs(x - y) > rel_tol * max(abs(x), abs(y), 1e-12) for (_, x), (_, y) in zip(a, b)):
        return False
    i = 0
    while i < len(a):
        j = i
        while j + 1 < len(a) and abs(a[j + 1][1] - a[i][1]) <= rel_tol * max(abs(a[i][1]), 1e-12):
            j += 1
        if j + 1 < len(a) and {d for d, _ in a[i : j + 1]} != {d for d, _ in b[i : j + 1]}:
            return False
        i = j + 1
    return True
