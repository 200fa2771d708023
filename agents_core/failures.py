"""Failure policies: what a failed tool call or a failed agent does to the run.

Three policies, set per tool (``ToolRef.on_failure``, ``McpRef.on_failure``) and per
agent (``AgentSpec.on_failure``, ``BaseAgent(on_failure=...)``):

- ``fail``: the run ends with a terminal error (``FailedByPolicyError``), wherever the
  failure happened, even inside an agent tool or a parallel branch.
- ``continue``: the run reads the failure and goes on. A tool call's failure is the
  error result the model reads (the default for tools); an agent's is a non-fatal
  ``error`` event, after which its parent goes on (as an agent tool: the parent's model
  reads an error result).
- ``degrade``: as ``continue``, and the failure is marked (``ErrorInfo.degraded``), so
  the run, once it has finished, says it is ``degraded`` and what failed
  (``degradations``).

An agent without a policy keeps where it runs in charge: its failure ends the run,
except as an agent tool (an error result) or a parallel branch (a branch error). An
agent's failure is a model call that failed after its retries, a hook that raised, an
answer that never matched its output schema, or a failure inside it that nothing below
absorbed. Fail-safe limits (``LimitExceededError``) and cancellation always end the run.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

from agents_core.contracts import ToolResult
from agents_core.events import ErrorInfo, Event


class FailurePolicy(StrEnum):
    FAIL = "fail"
    CONTINUE = "continue"
    DEGRADE = "degrade"


def result_code(result: ToolResult) -> str:
    """The code an error result starts with (``"tool_timeout: ..."``), else ``tool_failed``."""
    code, colon, _ = result.output.partition(":")
    return code.strip() if colon and code.strip().isidentifier() else "tool_failed"


def tool_degradation(result: ToolResult) -> ErrorInfo:
    """What a failed call of a tool whose policy is ``degrade`` records on its response."""
    return ErrorInfo(
        code=result_code(result),
        message=f"tool {result.name!r} failed: {result.output}",
        failure="non_fatal",
        degraded=True,
    )


def degradations(events: Iterable[Event]) -> list[ErrorInfo]:
    """The failures a ``degrade`` policy let a run go past, in the order they happened:
    a run that finished with any of them finished ``degraded``."""
    return [event.error for event in events if event.error is not None and event.error.degraded]


def degraded_summary(failures: Iterable[ErrorInfo]) -> str:
    """One sentence naming what failed, for a degraded run's record."""
    said = [failure.message for failure in failures]
    if not said:
        return ""
    return f"finished degraded; {len(said)} failure(s): " + "; ".join(said)
