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

import importlib
from collections.abc import Sequence

from django.conf import settings

from studio.runs.executor import RunExecutor

_executor: RunExecutor | None = None

MODEL_CLIENT = ("agents_core.llm.openai",)
"""What a run with a model of its own imports on first use: the OpenAI client (~0.7 s)."""
LAZY_IMPORTS = (*MODEL_CLIENT, "agents_core.tools.mcp", "agents_core.tools.a2a")
"""Everything runs import on first use: the model client, MCP and A2A tools (~1.2 s)."""


def preload(modules: Sequence[str] = LAZY_IMPORTS) -> None:
    """Import ``modules`` now, while a process that executes runs starts: otherwise its
    first run pays them (its timeline counting the time as runner overhead), on a thread
    that holds the interpreter against the event loop, its lease renewals and its
    sockets meanwhile. ``run_worker`` imports all of them; a server with inline
    execution the model client (unless ``STUDIO_PRELOAD`` is off): the tools' libraries
    only runs that use them need, and every server's start would pay for them."""
    for module in modules:
        importlib.import_module(module)


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
