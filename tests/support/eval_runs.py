"""Helpers for the eval-run tests: datasets stored as rows, scripted agents that echo,
and waiting for an eval to end."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from django.contrib.auth.models import User

from studio import services
from studio.models import ACTIVE_RUN_STATUSES, Agent, ModelConfig, Run
from studio.models.evals import ACTIVE_EVAL_STATUSES, Dataset, EvalRun
from studio.services import datasets

ECHO = "You said: {last_user_message}"


def make_dataset(owner: User, name: str, cases: list[dict[str, Any]]) -> Dataset:
    """A dataset whose version 1 (its current one) holds ``cases`` (Case JSON)."""
    return datasets.create_dataset(owner, name, cases=cases)


def case(
    name: str,
    *turns: str,
    expect: str | None = None,
    state: dict[str, Any] | None = None,
    **expectation: Any,
) -> dict[str, Any]:
    """A case of ``turns`` (from ``state``) expecting ``expect`` in its final output
    and whatever else ``expectation`` says."""
    if expect is not None:
        expectation["final_output"] = expect
    return {
        "name": name,
        "input": {"turns": list(turns), "state": state or {}},
        "expect": expectation,
    }


def echo_agent(
    owner: User,
    name: str = "echo",
    *,
    latency_s: float = 0.0,
    script: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> Agent:
    """An agent on its own scripted model that answers ``You said: <message>`` (or
    plays ``script`` once per run), ``latency_s`` before each answer."""
    ModelConfig.objects.create(
        owner=owner,
        name=f"{name}_model",
        provider="scripted",
        options={
            "script": [{"text": ECHO}] if script is None else script,
            "loop": script is None,
            "latency_s": latency_s,
        },
    )
    full = {"name": name, "model": f"{name}_model", "instruction": "Echo.", **spec}
    return services.create_agent(owner, name=name, spec=full)


def active_case_runs(eval_run_id: uuid.UUID) -> int:
    """How many of the eval's case sessions have a run in progress right now."""
    sessions = EvalRun.objects.get(pk=eval_run_id).results.values_list("session_id", flat=True)
    runs = Run.objects.filter(session_id__in=list(sessions), status__in=ACTIVE_RUN_STATUSES)
    return runs.values("session_id").distinct().count()


async def until_ended(eval_run_id: uuid.UUID, *, within: float = 20.0) -> EvalRun:
    deadline = time.monotonic() + within
    while True:
        eval_run = await EvalRun.objects.aget(pk=eval_run_id)
        if eval_run.status not in ACTIVE_EVAL_STATUSES:
            return eval_run
        if time.monotonic() > deadline:
            raise AssertionError(f"eval {eval_run_id} still {eval_run.status} after {within}s")
        await asyncio.sleep(0.02)
