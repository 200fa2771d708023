"""What other parts of Studio hear from the run lifecycle, without ``runs`` importing
them: listeners told when a run stopped executing, and sweeps run beside the recovery
sweep on every server.

``runs`` sits below the packages that react to a run's end (``studio.evals`` advances
an eval when one of its case runs ends), so those register here at start-up
(``StudioConfig.ready``) instead of being imported. A listener runs in the event loop
that executed the run (a server's, or a worker's), after the run's final status went to
its viewers; a sweep runs every ``STUDIO_PARKED_SWEEP_S`` on every server, so whatever a
listener missed (a crash, a run ended by recovery or by a cancel before it started) is
picked up there. Neither may raise into the lifecycle: failures are logged.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from django.conf import settings

from studio.models import Run

logger = logging.getLogger("studio.runs")

RunStopped = Callable[[Run], Awaitable[None]]
Sweep = Callable[[], Awaitable[None]]

_stopped: list[RunStopped] = []
_sweeps: list[Sweep] = []


def on_run_stopped(listener: RunStopped) -> None:
    """Call ``listener(run)`` whenever an execution of a run stopped (once per process)."""
    if listener not in _stopped:
        _stopped.append(listener)


def on_sweep(sweep: Sweep) -> None:
    """Call ``sweep()`` every ``STUDIO_PARKED_SWEEP_S`` on every server (once per process)."""
    if sweep not in _sweeps:
        _sweeps.append(sweep)


async def run_stopped(run: Run) -> None:
    """Tell every listener that ``run``'s execution stopped. Never raises."""
    for listener in list(_stopped):
        try:
            await listener(run)
        except Exception:
            logger.exception("a listener of run %s's end failed", run.pk)


async def sweep_once() -> None:
    """Run every registered sweep once. Never raises."""
    for sweep in list(_sweeps):
        try:
            await sweep()
        except Exception:
            logger.exception("the sweep %s failed", getattr(sweep, "__qualname__", sweep))


async def sweep_forever() -> None:
    while True:
        await sweep_once()
        await asyncio.sleep(settings.STUDIO_PARKED_SWEEP_S)
