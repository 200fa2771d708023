"""Run evaluators: a spec, a case and what the case's run did (its ``Outcome``) make a
``Verdict``.

The evaluators, by spec kind:

- ``exact``, ``contains``, ``regex``, ``json_schema``: the final output
  (``agents_core.evals.output_checks``);
- ``trajectory``, ``limits``, ``state``: the tool calls, the spend, the end state
  (``agents_core.evals.run_checks``);
- ``judge``: an LLM grades the run against a rubric (``agents_core.evals.judge``);
- ``custom``: a check registered in Python (``agents_core.evals.registry``).

A verdict is ``skipped`` when the case lacks what its evaluator needs (no expected
output for ``exact``, no expected calls for ``trajectory``...), and ``error`` when the
evaluator could not decide; ``evaluate`` never raises for a bad run or a bad evaluator.

A run that ended with an error (``Outcome.error``) is still evaluated, on what it left:
its output (often empty, so output checks fail), its calls, its state and its spend. A
failed verdict's detail then says the run's error too, and the judge is shown it; a
case that must not fail says so with the ``no_error`` custom evaluator.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from agents_core.evals.contracts import (
    Case,
    ContainsSpec,
    CustomSpec,
    EvaluatorSpec,
    ExactSpec,
    JsonSchemaSpec,
    JudgeSpec,
    LimitsSpec,
    Outcome,
    RegexSpec,
    StateSpec,
    TrajectorySpec,
    Verdict,
)
from agents_core.evals.judge import judge
from agents_core.evals.output_checks import (
    check_contains,
    check_exact,
    check_json_schema,
    check_regex,
    errored,
    label_of,
)
from agents_core.evals.registry import run_custom
from agents_core.evals.run_checks import check_limits, check_state, check_trajectory
from agents_core.llm.contracts import BaseLlm

__all__ = ["evaluate", "evaluate_all", "label_of"]


async def evaluate(
    spec: EvaluatorSpec, case: Case, outcome: Outcome, *, judge_llm: BaseLlm | None = None
) -> Verdict:
    """The verdict of one evaluator on one case's outcome. ``judge_llm`` is the model a
    ``judge`` spec asks (without one, its verdict is an error)."""
    try:
        return await _dispatch(spec, case, outcome, judge_llm)
    except Exception as exc:  # a bug in an evaluator must not end the eval run
        return errored(spec, f"the evaluator failed: {type(exc).__name__}: {exc}")


async def _dispatch(
    spec: EvaluatorSpec, case: Case, outcome: Outcome, judge_llm: BaseLlm | None
) -> Verdict:
    match spec:
        case ExactSpec():
            return check_exact(spec, case, outcome)
        case ContainsSpec():
            return check_contains(spec, case, outcome)
        case RegexSpec():
            return await check_regex(spec, case, outcome)
        case JsonSchemaSpec():
            return check_json_schema(spec, case, outcome)
        case TrajectorySpec():
            return check_trajectory(spec, case, outcome)
        case LimitsSpec():
            return check_limits(spec, case, outcome)
        case StateSpec():
            return check_state(spec, case, outcome)
        case JudgeSpec():
            return await judge(spec, case, outcome, judge_llm)
        case CustomSpec():
            return await run_custom(spec, case, outcome)
    raise TypeError(f"not an evaluator spec: {type(spec).__name__}")  # pragma: no cover


async def evaluate_all(
    specs: Sequence[EvaluatorSpec],
    case: Case,
    outcome: Outcome,
    *,
    judges: Mapping[str, BaseLlm] | None = None,
) -> list[Verdict]:
    """The verdicts of ``specs`` on one case's outcome, in the order of the specs. A
    ``judge`` spec asks ``judges[spec.model]``; a model missing there makes its verdict
    an error. Evaluators run one after another: judges are the slow ones, and a host
    that wants them concurrent runs cases concurrently."""
    judges = judges or {}
    return [
        await evaluate(
            spec,
            case,
            outcome,
            judge_llm=judges.get(spec.model) if isinstance(spec, JudgeSpec) else None,
        )
        for spec in specs
    ]
