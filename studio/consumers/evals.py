"""An eval run's live progress, ``/ws/evals/<uuid>/``: its owner's alone.

On connect it sends ``{"type": "snapshot", "eval": {...}, "results": [...]}`` (the
shapes of ``GET /api/evals/<id>/`` and its ``results/``), then, whenever some of its
case results change (``studio.evals.live``), ``{"type": "update", "eval": {...},
"results": [the changed ones]}``: a client replaces results by ``id``. Every
``RESYNC_S`` it reads the eval again and sends a new snapshot if the eval moved on
meanwhile, so a dropped message only delays a change. A client may ask for a snapshot
at any time with ``{"type": "snapshot"}``; any other frame gets an ``error`` frame,
and an oversized or flooding client is closed (4009, 4429).

Signed out: closed with 4401; an eval that is not the user's, or no eval: 4404.
"""

from __future__ import annotations

import json
import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from studio.api.eval_serializers import eval_payload, result_payloads
from studio.consumers.base import FeedConsumer
from studio.db import db_sync_to_async
from studio.evals.live import eval_group
from studio.live import protocol
from studio.models.evals import EvalRun

RESYNC_S = 15.0
MAX_RESULTS_PER_FRAME = 1_000


class SnapshotFrame(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["snapshot"]


def _owned(user: Any, eval_id: str) -> EvalRun | None:
    if not user.is_authenticated:
        return None
    try:
        pk = uuid.UUID(eval_id)
    except ValueError:
        return None
    related = ("agent_version__agent", "dataset_version__dataset")
    return EvalRun.objects.select_related(*related).filter(pk=pk, owner_id=user.pk).first()


def _read(eval_pk: uuid.UUID, result_ids: list[str] | None) -> dict[str, Any]:
    related = ("agent_version__agent", "dataset_version__dataset")
    eval_run = EvalRun.objects.select_related(*related).get(pk=eval_pk)
    results = eval_run.results.order_by("case_index", "repeat")
    if result_ids is not None:
        results = results.filter(pk__in=[uuid.UUID(rid) for rid in result_ids])
    return {
        "eval": eval_payload(eval_run),
        "results": result_payloads(results[:MAX_RESULTS_PER_FRAME]),
    }


class EvalConsumer(FeedConsumer):
    RESYNC_S = RESYNC_S
    eval_pk: uuid.UUID | None = None
    _moved: tuple[Any, ...] | None = None

    async def open(self) -> None:
        user = self.scope["user"]
        if not user.is_authenticated:
            await self.close(code=protocol.CLOSE_UNAUTHENTICATED)
            return
        eval_id = self.scope["url_route"]["kwargs"]["eval_id"]
        eval_run = await db_sync_to_async(_owned)(user, eval_id)
        if eval_run is None:
            await self.close(code=protocol.CLOSE_NOT_FOUND)
            return
        self.eval_pk = eval_run.pk
        await self.join(eval_group(eval_run.pk))

    async def frame(self, text_data: str | None) -> None:
        if self.eval_pk is None:
            return
        try:
            SnapshotFrame.model_validate_json(text_data or "")
        except ValidationError:
            detail = 'the only frame a client sends is {"type": "snapshot"}'
            await self.send(text_data=protocol.error_frame("invalid", detail))
            return
        await self.snapshot()

    async def eval_changed(self, message: dict[str, Any]) -> None:
        results = [str(rid) for rid in message.get("results", [])]
        await self._send("update", results)

    async def snapshot(self, *, only_if_moved: bool = False) -> None:
        await self._send("snapshot", None, only_if_moved=only_if_moved)

    async def _send(
        self, kind: str, result_ids: list[str] | None, *, only_if_moved: bool = False
    ) -> None:
        if self.eval_pk is None:
            return
        try:
            read = await db_sync_to_async(_read)(self.eval_pk, result_ids)
        except EvalRun.DoesNotExist:  # deleted while watched
            await self.close(code=protocol.CLOSE_NOT_FOUND)
            return
        summary = read["eval"]["summary"] or {}
        moved = (read["eval"]["status"], summary.get("done"), json.dumps(summary.get("counts")))
        if only_if_moved and moved == self._moved:
            return
        self._moved = moved
        await self.send(text_data=json.dumps({"type": kind, **read}, default=str))
