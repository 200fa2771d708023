"""The run lifecycle: start, execute, publish, approve, cancel, interrupt and recover,
end. ``docs/architecture.md`` draws it.

- ``records``: a run's row: queued with its user message, claimed, leased, and
  ``end_run``, the one way a run ends.
- ``execute``: executing one run (the only caller of ``Runner``) and publishing it.
- ``executor``: the port; ``inline`` and ``queue`` (with ``tasks`` and ``relay`` on the
  worker's side) its adapters, one chosen at start-up by ``configure``.
- ``recovery``: ending the runs whose executor died.
- ``hooks``: listeners told a run stopped, and sweeps beside recovery, for packages
  above (``studio.evals``) that ``runs`` may not import.

Services reach it through ``executor()``; nothing else reads the execution mode.
"""

from __future__ import annotations

from django.conf import settings

from studio.runs.executor import RunExecutor

_executor: RunExecutor | None = None


def configure(mode: str | None = None) -> RunExecutor:
    """Choose the executor from ``STUDIO_RUN_EXECUTION`` (Studio's app does at start-up;
    a test that changes the setting calls it again), or from ``mode`` (a command that
    executes its runs in its own process, ``run_evals``, asks for ``inline``)."""
    global _executor
    if (mode or settings.STUDIO_RUN_EXECUTION) == "worker":
        from studio.runs.queue import QueuedExecutor

        _executor = QueuedExecutor()
    else:
        from studio.runs.inline import InlineExecutor

        _executor = InlineExecutor()
    return _executor


def executor() -> RunExecutor:
    """The executor chosen at start-up."""
    return _executor or configure()
