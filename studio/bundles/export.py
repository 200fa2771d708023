"""A session as a portable run bundle (``studio.bundles.format``): what ``GET
/api/sessions/{id}/bundle/`` answers. Contains no secret: model configurations are
written field by field (never the key, its ciphertext or its hint; the base URL
without credentials, query or fragment). Carries the bytes of the files its messages
attached, each at most ``STUDIO_UPLOAD_MAX_BYTES`` and ``MAX_FILE_BYTES`` together (a
file past that, or whose bytes were swept, is named by its message but not carried)."""

from __future__ import annotations

import base64
import io
import json
import zipfile
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings
from django.utils import timezone

from agents_core import exceptions as core_exceptions
from agents_core.specs import stored_agents
from studio import files as stored_files
from studio.agents import specs, versions
from studio.agents.tools import tool_registry
from studio.bundles import format as f
from studio.bundles.spec_tree import inline_refs, model_names
from studio.models import AgentVersion, ApprovalDecision, ModelConfig, Run, Session

BUNDLE_MEMBER = "bundle.json"
ZIP_SUFFIX = ".studio-run.zip"
MAX_FILE_BYTES = 12 * 1024 * 1024
"""The most the attached files of one bundle may be together (their bytes; base64 adds
a third): with the events they fit in the 20 MB a bundle may be."""


def export_bundle(session: Session) -> f.Bundle:
    """``session`` as a bundle, read now."""
    runs = list(session.runs.order_by("created_at"))
    events = list(session.events.order_by("seq").values_list("payload", flat=True))
    return f.Bundle(
        format=f.FORMAT,
        version=f.VERSION,
        exported_at=timezone.now(),
        session=f.BundleSession(
            id=str(session.pk),
            title=session.title,
            state=session.state,
            status=session.status,
            created_at=session.created_at,
            updated_at=session.updated_at,
        ),
        fork=_lineage(session),
        agent=None if session.agent_version is None else _agent(session.agent_version),
        runs=[_run(run) for run in runs],
        events=events,
        approvals=[_approval(row) for row in session.approval_decisions.order_by("decided_at")],
        files=list(carried_files(session.owner, events)),
    )


def carried_files(owner: Any, events: Sequence[dict[str, Any]]) -> Iterator[f.BundleFile]:
    """The files ``events`` attach, as far as ``owner``'s are stored and within the
    limits (``MAX_FILE_BYTES`` together, ``STUDIO_UPLOAD_MAX_BYTES`` each)."""
    budget = MAX_FILE_BYTES
    for upload in stored_files.attached(owner, events):
        if upload.size > min(budget, settings.STUDIO_UPLOAD_MAX_BYTES):
            continue
        try:
            data = stored_files.read(upload.blob_id)
        except FileNotFoundError:
            continue
        budget -= len(data)
        yield f.BundleFile(
            sha256=upload.blob_id,
            content_type=upload.content_type,
            size=len(data),
            data=base64.b64encode(data).decode("ascii"),
        )


def bundle_json(bundle: f.Bundle) -> bytes:
    return bundle.model_dump_json(indent=1).encode()


def bundle_zip(bundle: f.Bundle) -> bytes:
    """The bundle as a ``.studio-run.zip``: one member, ``bundle.json``."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(BUNDLE_MEMBER, bundle_json(bundle))
    return out.getvalue()


def _lineage(session: Session) -> f.ForkLineage | None:
    if session.fork_seq is None:
        return None
    parent = None if session.parent_id is None else str(session.parent_id)
    return f.ForkLineage(
        parent_session=parent, fork_seq=session.fork_seq, fork_event_id=session.fork_event_id
    )


def _run(run: Run) -> f.BundleRun:
    return f.BundleRun(
        id=str(run.pk),
        invocation_id=run.invocation_id,
        message=run.message,
        status=run.status,
        created_at=run.created_at,
        started_at=run.started_at,
        ended_at=run.ended_at,
        start_seq=run.start_seq,
        input_tokens=run.input_tokens,
        output_tokens=run.output_tokens,
        cost=run.cost,
        cost_currency=run.cost_currency if run.cost is not None else "",
        cost_complete=run.cost_complete,
        error_code=run.error_code,
        error_message=run.error_message,
        timing=run.timing,
        resumed_from=_id(run.resumed_from_id),
        replay_of=_id(run.replay_of_id),
        copied_from=_id(run.copied_from_id),
    )


def _id(value: object) -> str | None:
    return None if value is None else str(value)


def _approval(row: ApprovalDecision) -> f.ApprovalInfo:
    return f.ApprovalInfo(
        run=str(row.run_id),
        call_id=row.call_id,
        tool=row.tool,
        decision=row.decision,
        channel=row.channel,
        decided_by=row.decided_by_name,
        args_hash=row.args_hash,
        args_shown=row.args_shown,
        args_approved=row.args_approved,
        reason=row.reason,
        decided_at=row.decided_at,
    )


def _agent(version: AgentVersion) -> f.BundleAgent:
    owner = version.agent.owner
    spec = inline_refs(version.spec, {n: specs.normalize(s) for n, s in _stored(owner).items()})
    configs = versions.model_configs(owner.pk)
    return f.BundleAgent(
        name=version.agent.name,
        version=version.number,
        content_hash=version.content_hash,
        spec=spec,
        model_configs=[model_info(configs[n]) for n in sorted(model_names(spec)) if n in configs],
        tool_schemas=list(_tool_sets(spec, owner.pk)),
    )


def _stored(owner: Any) -> dict[str, Any]:
    return specs.owner_agent_specs(owner)


def model_info(config: ModelConfig) -> f.ModelConfigInfo:
    return f.ModelConfigInfo(
        name=config.name,
        provider=config.provider,
        model=config.model,
        base_url=clean_url(config.base_url),
        options=json.loads(json.dumps(config.options)),
        price_input=config.price_input,
        price_cached_input=config.price_cached_input,
        price_output=config.price_output,
        price_currency=config.price_currency,
    )


def clean_url(url: str) -> str:
    """``url`` without user, password, query or fragment (where credentials hide)."""
    if not url:
        return ""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _tool_sets(spec: dict[str, Any], owner_id: object) -> Iterator[f.ToolSet]:
    """The schemas of the tools each tool reference of the tree builds to, as the model
    is shown them (a reference that no longer builds is listed without tools)."""
    registry = tool_registry(owner_id)
    seen: set[str] = set()
    for node in stored_agents(spec):
        for ref in node.get("tools") or []:
            name = ref.get("name") if isinstance(ref, dict) else None
            entry = registry.get(name) if isinstance(name, str) else None
            if entry is None or name in seen:
                continue
            seen.add(entry.name)
            try:
                built = entry.create(ref.get("settings") or {})
            except (core_exceptions.AgentsCoreError, ValueError, OSError):
                built = []
            schemas = [t.schema() for t in built]
            yield f.ToolSet(
                ref=entry.name,
                tools=[
                    f.ToolSchema(name=s.name, description=s.description, parameters=s.parameters)
                    for s in schemas
                ],
            )
