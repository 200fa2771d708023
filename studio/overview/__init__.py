"""The overview dashboard's figures: per day, per agent and per model, a user's runs,
errors, run latency (p50/p95), tokens and cost over a date range (issue 19).

Everything is an aggregate the database computes over indexed rows (``Run`` by its
``created_at``), grouped by day and agent; percentiles
are PostgreSQL's ``percentile_cont`` there, and a bounded read of run durations on
SQLite (``latency``). Model calls are read from the day totals kept as runs end
(``studio.rollups.days``), so a range costs a few rows per day and model.
"""

from studio.overview.figures import DayRange, Figures, Row, overview

__all__ = ["DayRange", "Figures", "Row", "overview"]
