"""A checked bundle (``studio.bundles.checks``) stored as a read-only session of the
importing user, in one transaction: nothing of a bundle is stored unless all of it is.

- The agent version becomes an agent of the importer, ``<name>-imported`` (a number
  added while that name is taken), whose spec names, instead of the exporter's model
  configurations, stand-ins of the importer's: scripted models (``-imported`` names too)
  with the original's provider and model kept in the bundle only. The recorded outputs
  drive a replay (``services.replay_run``); a replay that diverges reaches the stand-in,
  which says the recorded model is not here.
- The session keeps its title, state and status; ``imported_from`` marks it read-only
  (``services.sessions`` refuses new runs, ``services.forks`` forks) and says where it
  came from, fork lineage included.
- Events keep their seq and wire JSON (their ``session_id`` is the new session's), so
  the timeline and the spans (derived from events, ``studio.traces``) are the
  original's. Their usage and cost columns stay empty: an imported run's spending was
  someone else's and no roll-up or budget of the importer counts it.
- Runs keep their figures and timing; ``resumed_from`` links within the bundle; a run
  that was still active when exported is stored ``interrupted``.
- Attached files (version 2) are stored as the importer's uploads, so the timeline
  shows them and a replay reads them. Bytes this import wrote are removed again if it
  fails: a refused bundle leaves no file behind.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone
from pydantic import ValidationError

from agents_core import events as core_events
from agents_core import specs as core_specs
from agents_core.specs import stored_agents
from studio import files as stored_files
from studio.agents import specs
from studio.bundles import format as f
from studio.bundles.checks import Checked, refuse
from studio.bundles.spec_tree import is_ref, model_names, renamed_models
from studio.event_rows import insert_recorded
from studio.models import (
    ACTIVE_RUN_STATUSES,
    Agent,
    AgentVersion,
    ApprovalDecision,
    ModelConfig,
    Run,
    RunStatus,
    Session,
    SessionStatus,
)

SUFFIX = "-imported"
STAND_IN_TEXT = (
    "This agent was imported from a run bundle: its recorded model is not available "
    "here, so only the recorded answers can be replayed."
)
BATCH = 1_000
_ACTIVE_SESSION = {"queued", "running", "waiting", "paused"}


def import_checked(owner: AbstractBaseUser, checked: Checked) -> Session:
    """Store ``checked`` for ``owner``; all of it or, on any refusal, nothing."""
    bundle = checked.bundle
    written: list[str] = []
    with transaction.atomic():
        try:
            version = None if bundle.agent is None else _agent(owner, bundle.agent)
            session = _session(owner, bundle, version, len(checked.events))
            stored_files.store(owner, checked.files, written=written)
            _events(session, checked.events)
            runs = _runs(session, bundle.runs)
            _approvals(session, runs, bundle.approvals)
        except BaseException:
            stored_files.discard(written)
            raise
    return session


def _agent(owner: AbstractBaseUser, info: f.BundleAgent) -> AgentVersion:
    try:
        parsed = core_specs.AgentSpec.model_validate(info.spec)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ("agent", "spec", *first["loc"])
        raise refuse("bundle_bad_spec", f"not an agent spec: {first['msg']}", where) from None
    spec = specs.normalize(parsed)
    if any(is_ref(c) for n in stored_agents(spec) for c in n.get("sub_agents") or []):
        raise refuse(
            "bundle_bad_spec",
            "a bundle's spec names no other agent (references are written out)",
            ("agent", "spec"),
        )
    priced = {config.name: config for config in info.model_configs}
    stand_ins = {name: _stand_in(owner, name, priced.get(name)) for name in model_names(spec)}
    spec = renamed_models(spec, stand_ins)
    agent = Agent.objects.create(
        owner_id=owner.pk,
        name=_free_name(owner, info.name),
        description=f"Imported from a run bundle: {info.name} v{info.version}.",
    )
    version = AgentVersion(agent=agent, number=1, spec=spec, note="imported from a run bundle")
    version.save()
    agent.current_version = version
    agent.save(update_fields=["current_version", "updated_at"])
    return version


def _free_name(owner: AbstractBaseUser, base: str) -> str:
    """``<base>-imported`` (``-2``, ``-3`` ... while taken), ``base`` reduced to the
    characters an agent name may have."""
    taken = set(Agent.objects.filter(owner_id=owner.pk).values_list("name", flat=True))
    return _first_free(re.sub(r"[^A-Za-z0-9_-]", "_", base) or "agent", taken, 64)


def _first_free(base: str, taken: set[str], limit: int) -> str:
    stem = base if base[:1].isalpha() or base[:1] == "_" else f"a{base}"
    for number in range(1, 10_000):
        tail = SUFFIX if number == 1 else f"{SUFFIX}-{number}"
        name = stem[: limit - len(tail)] + tail
        if name not in taken:
            return name
    raise refuse("bundle_name_taken", "no free name for the imported agent")


def _stand_in(owner: AbstractBaseUser, name: str, info: f.ModelConfigInfo | None) -> str:
    """A scripted stand-in for model config ``name`` among ``owner``'s (its prices the
    bundle's, so a replay's costs are the original's)."""
    taken = set(ModelConfig.objects.filter(owner_id=owner.pk).values_list("name", flat=True))
    config = ModelConfig(
        owner_id=owner.pk,
        name=_first_free(name, taken, 100),
        provider=ModelConfig.Provider.SCRIPTED,
        model=(info.model if info else "")[:200],
        options={"script": [{"text": STAND_IN_TEXT}], "loop": True},
    )
    if info is not None and info.price_input is not None and info.price_output is not None:
        config.price_input = info.price_input
        config.price_cached_input = info.price_cached_input
        config.price_output = info.price_output
        config.price_currency = info.price_currency
    config.save()
    return config.name


def _session(
    owner: AbstractBaseUser, bundle: f.Bundle, version: AgentVersion | None, last_seq: int
) -> Session:
    origin: dict[str, Any] = {
        "format": f.FORMAT,
        "version": bundle.version,
        "exported_at": bundle.exported_at.isoformat(),
        "imported_at": timezone.now().isoformat(),
        "session": bundle.session.id,
        "agent": None if bundle.agent is None else bundle.agent.name,
        "fork": None if bundle.fork is None else bundle.fork.model_dump(mode="json"),
    }
    status = bundle.session.status
    return Session.objects.create(
        owner_id=owner.pk,
        agent_version=version,
        title=bundle.session.title,
        state=bundle.session.state,
        status=SessionStatus.INTERRUPTED if status in _ACTIVE_SESSION else status,
        last_seq=last_seq,
        created_at=bundle.session.created_at,
        updated_at=bundle.session.updated_at,
        imported_from=origin,
    )


def _events(session: Session, events: list[core_events.Event]) -> None:
    for start in range(0, len(events), BATCH):
        insert_recorded(session, events[start : start + BATCH])


def _runs(session: Session, runs: list[f.BundleRun]) -> dict[str, Run]:
    made: dict[str, Run] = {}
    for info in runs:
        active = info.status in ACTIVE_RUN_STATUSES
        run = Run.objects.create(
            session=session,
            invocation_id=info.invocation_id,
            message=info.message,
            status=RunStatus.INTERRUPTED if active else info.status,
            started_at=info.started_at,
            ended_at=info.ended_at or (timezone.now() if active else None),
            input_tokens=info.input_tokens,
            output_tokens=info.output_tokens,
            cost=info.cost,
            cost_currency=info.cost_currency,
            cost_complete=info.cost_complete,
            error_code=info.error_code,
            error_message=info.error_message,
            timing=info.timing,
            start_seq=info.start_seq,
            resumed_from=None if info.resumed_from is None else made[info.resumed_from],
        )
        _keep_time(Run, run.pk, "created_at", info.created_at)
        made[info.id] = run
    return made


def _approvals(session: Session, runs: dict[str, Run], approvals: list[f.ApprovalInfo]) -> None:
    for info in approvals:
        row = ApprovalDecision.objects.create(
            session=session,
            run=runs[info.run],
            call_id=info.call_id,
            tool=info.tool,
            decision=info.decision,
            channel=info.channel,
            decided_by_name=info.decided_by,
            args_hash=info.args_hash,
            args_shown=info.args_shown,
            args_approved=info.args_approved,
            reason=info.reason,
        )
        _keep_time(ApprovalDecision, row.pk, "decided_at", info.decided_at)


def _keep_time(model: Any, pk: Any, field: str, value: datetime) -> None:
    """Set a time an ``auto_now_add`` field chose to the recorded one."""
    model.objects.filter(pk=pk).update(**{field: value})
