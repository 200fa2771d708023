"""Evals: datasets of cases, evaluators and their verdicts.

- ``contracts``: the typed values (cases, outcomes, evaluator specs, verdicts);
- ``outcome``: what a case's session did, read from its stored events;
- ``evaluators``: ``evaluate`` and ``evaluate_all``, a spec, a case and an outcome to a
  verdict (the checks live in ``output_checks``, ``run_checks``, ``judge``);
- ``registry``: custom evaluators written in Python;
- ``subset``: the JSON subset rule expected arguments and state match by.
"""
