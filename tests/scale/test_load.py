"""The many-users scenario (``bench.load``), 30 seconds at reduced scale: Locust's
browsers and live watchers against two Daphnes and a worker on PostgreSQL and Redis.
No timing is asserted (that is ``make load``'s to report): every request answered
without error, and the stored events of the live runs reached their viewers."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.load.run import Scale, load

SCALE = Scale(users=8, live=3, workers=1, seconds=30, spawn_rate=10, sample_s=5)


@pytest.mark.timeout(240)  # starting two servers and a worker on a new database, then 30 s
def test_browsers_and_live_viewers_get_every_answer_and_their_events(tmp_path: Path) -> None:
    figures = load(SCALE, tmp_path)

    rows = {row["name"]: row for row in figures["requests"]}
    assert figures["failures"] == [], figures["failures"]
    assert rows["Aggregated"]["failures"] == 0
    assert rows["ws live run"]["count"] >= 1, "no live run ended while watched"
    assert any(name.startswith("page ") for name in rows)
    assert any(name.startswith("api ") for name in rows)
    assert figures["locust_exit"] == 0
    delivery = figures["delivery"]
    assert delivery["received"] > 0, delivery
    # Each run stores two events a tool round: its viewer saw at least those.
    assert delivery["received"] >= rows["ws live run"]["count"] * 2 * SCALE.steps
    # Where the CPU went: every server and worker, and Locust itself, used some.
    assert set(figures["cores"]) == {"server 0", "server 1", "worker 0", "locust"}
    assert all(used > 0 for used in figures["cores"].values()), figures["cores"]
    ran = sum(m.get('studio_runs_ended{status="succeeded"}', 0) for m in figures["metrics"])
    assert ran >= rows["ws live run"]["count"]
