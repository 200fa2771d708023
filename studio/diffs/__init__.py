"""Diffs: two runs compared step by step. ``steps`` turns a run's events into steps,
``align`` pairs the steps of two runs by who took them and what kind they are (a
weighted sequence alignment, not their positions), ``json_diff`` and ``text`` say what
changed in a paired step, its results and the final answers, and ``compare`` puts it
together with the runs' state and figures. All of these are pure; ``reads`` reads a run
from the database for them."""
