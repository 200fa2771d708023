"""Evals: datasets of cases, evaluators and their verdicts (``contracts``)."""
