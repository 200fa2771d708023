"""An eval run's summary from its results: counts, pass rates, unbiased pass@k, cost,
tokens and latency percentiles (pure functions, no database)."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest

from studio.evals.summary import Figures, pass_at_k, percentile, summarise


def fig(case: int, repeat: int, status: str, **more: object) -> Figures:
    return Figures(case_index=case, case_name=f"c{case}", repeat=repeat, status=status, **more)  # type: ignore[arg-type]


def test_pass_at_k_is_the_unbiased_estimator() -> None:
    assert pass_at_k(5, 0, 1) == 0.0
    assert pass_at_k(5, 5, 3) == 1.0
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25)
    # 1 - C(n-c, k) / C(n, k), n=5, c=2, k=2: 1 - 3/10
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)
    assert pass_at_k(10, 3, 5) == pytest.approx(1 - math.comb(7, 5) / math.comb(10, 5))
    assert pass_at_k(3, 1, 3) == 1.0  # n - c < k: some sample of k always holds the pass
    with pytest.raises(ValueError, match="0 < k <= n"):
        pass_at_k(2, 1, 3)


def test_percentiles_interpolate_between_ranks() -> None:
    assert percentile([], 50) is None
    assert percentile([4.0], 95) == 4.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert percentile([float(i) for i in range(1, 101)], 95) == pytest.approx(95.05)


def test_the_summary_counts_errors_as_not_passing_and_leaves_open_results_out() -> None:
    results = [
        fig(0, 0, "passed", score=1.0, cost=Decimal("0.01"), tokens=10, latency_s=1.0),
        fig(0, 1, "failed", score=0.0, cost=Decimal("0.02"), tokens=20, latency_s=3.0),
        fig(1, 0, "error", cost=None, tokens=5, latency_s=2.0),
        fig(1, 1, "passed", score=0.5, cost=Decimal("0.03"), tokens=5, latency_s=4.0),
        fig(2, 0, "running"),
        fig(2, 1, "pending"),
        fig(3, 0, "cancelled"),
    ]
    summary = summarise(results, k=2)
    assert summary["counts"] == {
        "pending": 1, "running": 1, "passed": 2, "failed": 1, "error": 1, "cancelled": 1,
    }  # fmt: skip
    assert summary["total"] == 7 and summary["done"] == 5 and summary["judged"] == 4
    assert summary["pass_rate"] == 0.5  # the error counts against it
    assert summary["mean_score"] == pytest.approx(0.5)
    per_case = [
        (c["case_name"], c["runs"], c["passed"], c["pass_rate"]) for c in summary["per_case"]
    ]
    assert per_case == [
        ("c0", 2, 1, 0.5), ("c1", 2, 1, 0.5), ("c2", 0, 0, None), ("c3", 0, 0, None),
    ]  # fmt: skip
    # only the cases judged twice count for pass@2: 1 - C(1,2)/C(2,2) = 1 each
    assert summary["pass_at_k"] == {"k": 2, "value": 1.0}
    assert summary["cost"] == {"total": "0.06", "complete": False}  # one cost unknown
    assert summary["tokens"] == {"total": 40, "mean": 10.0}
    assert summary["latency_s"] == {"p50": 2.5, "p95": pytest.approx(3.85)}


def test_an_empty_or_unjudged_eval_has_no_rates() -> None:
    summary = summarise([fig(0, 0, "pending")])
    assert summary["pass_rate"] is None and summary["pass_at_k"] == {"k": 1, "value": None}
    assert summary["cost"] == {"total": None, "complete": True}
    assert summary["latency_s"] == {"p50": None, "p95": None}
