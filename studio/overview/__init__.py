"""The overview dashboard's figures: per day, per agent and per model, a user's runs,
errors, run latency (p50/p95), tokens and cost over a date range (issue 19).

Everything is an aggregate the database computes over indexed rows (``Run`` by its
``created_at``, model events by theirs), grouped by day, agent and model; percentiles
are PostgreSQL's ``percentile_cont`` there, and a bounded read of run durations on
SQLite (``latency``). An event does not name its model: the model of a model call is
the one its agent (the event's author) calls in the session's agent version
(``studio.agents.specs.agent_models``), resolved once per version in the range.
"""

from studio.overview.figures import DayRange, Figures, Row, overview

__all__ = ["DayRange", "Figures", "Row", "overview"]
