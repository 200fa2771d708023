"""An eval run's summary, from its case results: pure functions, no database.

- counts by status, and ``done`` (every result that will not change any more);
- ``pass_rate``: passed over judged (passed, failed or error: an error never counts
  as a pass, nor is it left out); ``None`` while nothing was judged;
- per case (all its repeats): runs judged, passed, pass rate;
- ``pass_at_k``: the unbiased estimator of Chen et al. (2021), per case
  ``1 - C(n - c, k) / C(n, k)`` with ``n`` judged repeats of which ``c`` passed,
  averaged over the cases with at least ``k`` judged repeats (``k`` defaults to the
  eval's repeats);
- cost: total of the judged results (``complete`` false when some result's cost was
  unknown: then the total is a lower bound), tokens, latency p50 and p95 (linear
  interpolation between closest ranks).

Everything in the returned dict is JSON (decimals as strings), so it is stored as is
in ``EvalRun.summary`` and sent as is to the API and the websocket.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

JUDGED = frozenset({"passed", "failed", "error"})
STATUSES = ("pending", "running", "passed", "failed", "error", "cancelled")
FINAL = JUDGED | {"cancelled"}


@dataclass(frozen=True, slots=True)
class Figures:
    """What the summary reads of one case result."""

    case_index: int
    case_name: str
    repeat: int
    status: str
    score: float | None = None
    cost: Decimal | None = None
    tokens: int = 0
    latency_s: float | None = None


def summarise(results: Sequence[Figures], *, k: int | None = None) -> dict[str, Any]:
    """The summary of an eval run's ``results``; see the module docstring."""
    counts = {status: 0 for status in STATUSES}
    for result in results:
        counts[result.status] = counts.get(result.status, 0) + 1
    judged = [result for result in results if result.status in JUDGED]
    per_case = cases(results)
    repeats = max((case["runs"] for case in per_case), default=0)
    chosen_k = k or max(repeats, 1)
    costs = [result.cost for result in judged]
    known = [cost for cost in costs if cost is not None]
    latencies = sorted(r.latency_s for r in judged if r.latency_s is not None)
    tokens = sum(result.tokens for result in judged)
    scores = [result.score for result in judged if result.score is not None]
    return {
        "total": len(results),
        "counts": counts,
        "done": sum(1 for result in results if result.status in FINAL),
        "judged": len(judged),
        "pass_rate": rate(counts["passed"], len(judged)),
        "mean_score": sum(scores) / len(scores) if scores else None,
        "per_case": per_case,
        "pass_at_k": {"k": chosen_k, "value": pass_at_k_of(per_case, chosen_k)},
        "cost": {
            "total": str(sum(known, Decimal(0))) if known else None,
            "complete": len(known) == len(costs),
        },
        "tokens": {"total": tokens, "mean": tokens / len(judged) if judged else None},
        "latency_s": {"p50": percentile(latencies, 50), "p95": percentile(latencies, 95)},
    }


def cases(results: Iterable[Figures]) -> list[dict[str, Any]]:
    """Per case, in case order: its judged repeats, how many passed, its pass rate."""
    by_case: dict[int, dict[str, Any]] = {}
    for result in sorted(results, key=lambda r: (r.case_index, r.repeat)):
        case = by_case.setdefault(
            result.case_index,
            {
                "case_index": result.case_index,
                "case_name": result.case_name,
                "runs": 0,
                "passed": 0,
            },
        )
        if result.status in JUDGED:
            case["runs"] += 1
            case["passed"] += result.status == "passed"
    for case in by_case.values():
        case["pass_rate"] = rate(case["passed"], case["runs"])
    return list(by_case.values())


def rate(passed: int, judged: int) -> float | None:
    return passed / judged if judged else None


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k of one case: ``n`` samples, ``c`` correct (``k <= n``)."""
    if not 0 < k <= n or not 0 <= c <= n:
        raise ValueError(f"pass@k needs 0 < k <= n and 0 <= c <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_at_k_of(per_case: Iterable[dict[str, Any]], k: int) -> float | None:
    """The mean pass@k over the cases judged at least ``k`` times; ``None`` if none."""
    values = [pass_at_k(case["runs"], case["passed"], k) for case in per_case if case["runs"] >= k]
    return sum(values) / len(values) if values else None


def percentile(ordered: Sequence[float], p: float) -> float | None:
    """The ``p``-th percentile of ascending ``ordered`` (linear interpolation)."""
    if not ordered:
        return None
    position = (len(ordered) - 1) * p / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
