"""Parked runs: what N runs waiting on a person's approval hold (inline execution).

Starts ``--runs`` runs (default 100) of an agent whose one tool call needs approval,
on a throw-away SQLite database, executed inline on this process's event loop as the
server would (``STUDIO_RUN_EXECUTION=inline``); once every one waits for a decision it
counts what they hold: the executor's live executions (one each), asyncio tasks, OS
threads, open model connections (the scripted model has none), memory; then decides
them all through the inbox's service and checks every run ends.

    .venv/bin/python -m bench.parked_approvals --runs 100

- ``parked_approvals.executions_held``: the executor's executions held while parked
  (target 0: a parked run executes nowhere until decided, ``studio.runs.parking``).
- ``parked_approvals.threads_held``: OS threads over the idle process's.
- ``parked_approvals.seconds_to_resume_all``: from the first decision to every run
  ended (each decided run queued again, built again and resumed from the record).
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.common import Measurement, emit, log, migrated_django, parser, peak_rss_mib


def _setup(data_dir: str, runs: int) -> None:
    os.environ["STUDIO_DATA_DIR"] = data_dir
    os.environ["STUDIO_RUN_EXECUTION"] = "inline"
    os.environ["STUDIO_MAX_CONCURRENT_RUNS_PER_USER"] = str(runs + 1)
    migrated_django(Path(data_dir), None)


async def measure(runs: int) -> None:
    from asgiref.sync import sync_to_async
    from django.contrib.auth.models import User

    from studio import live, services
    from studio import runs as run_engine
    from studio.models import ModelConfig, Run, RunStatus, Session, SessionStatus
    from studio.services.inbox import pending_approvals

    executor = run_engine.executor()
    executor.start()
    threads_idle = threading.active_count()
    tasks_idle = len(asyncio.all_tasks())

    def arrange() -> User:
        owner = User.objects.create_user("bench")
        ModelConfig.objects.create(owner=owner, name="scripted", provider="scripted")
        tools = [{"name": "calculator", "requires_approval": True}]
        spec = {
            "name": "careful",
            "model": "scripted",
            "instruction": "Use the calculator.\nResult: {last_tool_result}",
            "tools": tools,
            "approval": {"timeout_s": 3600},
        }
        agent = services.create_agent(owner, name="careful", spec=spec)
        for n in range(runs):
            session = services.start_session(owner, agent)
            services.start_run(session, f"what is {n} + 1")
        return owner

    owner = await sync_to_async(arrange)()
    started = time.perf_counter()
    held = getattr(executor, "_executions", {})
    while True:  # parked, and every execution let go and told its viewers
        waiting = await Run.objects.filter(status=RunStatus.WAITING).acount()
        if waiting == runs and not held and len(asyncio.all_tasks()) <= tasks_idle:
            break
        if time.perf_counter() - started > 120:
            raise SystemExit(f"only {waiting} of {runs} runs parked within 120 s")
        await asyncio.sleep(0.1)
    parked_after = time.perf_counter() - started
    executions = len(held)
    tasks = len(asyncio.all_tasks()) - tasks_idle
    threads = threading.active_count() - threads_idle
    log(f"{runs} parked in {parked_after:.1f} s: {executions} executions, {tasks} tasks")
    details = {
        "runs_parked": runs,
        "asyncio_tasks_held": tasks,
        "threads_over_idle": threads,
        "peak_rss_mib": round(peak_rss_mib(), 1),
        "seconds_to_park_all": round(parked_after, 2),
        "mode": "inline",
    }
    emit(
        Measurement(
            "parked_approvals.executions_held", executions, "executions", None, None, details
        )
    )
    emit(Measurement("parked_approvals.threads_held", threads, "threads", None, None, details))

    def decide_all() -> int:
        decided = 0
        for item in pending_approvals(owner):
            session = Session.objects.get(pk=item.session_id)
            body = live.ApprovalBody(
                call_id=item.call_id, args_hash=item.args_hash, decision="approve"
            )
            services.decide(session, body, user=owner, via="api")
            decided += 1
        return decided

    deciding = time.perf_counter()
    decided = await sync_to_async(decide_all)()
    while True:
        if await Session.objects.filter(status=SessionStatus.SUCCEEDED).acount() == runs:
            break
        await asyncio.sleep(0.1)
    resumed_after = time.perf_counter() - deciding
    log(f"decided {decided}; all {runs} runs succeeded {resumed_after:.1f} s after")
    emit(
        Measurement(
            "parked_approvals.seconds_to_resume_all",
            round(resumed_after, 2),
            "s",
            None,
            None,
            details,
        )
    )
    await executor.aclose()


def main() -> None:
    args = parser(__doc__)
    args.add_argument("--runs", type=int, default=100)
    options = args.parse_args()
    with tempfile.TemporaryDirectory() as data_dir:
        _setup(data_dir, options.runs)
        asyncio.run(measure(options.runs))


if __name__ == "__main__":
    sys.exit(main())
