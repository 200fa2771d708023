"""Where the bytes of attached files live: the port a runner reads them through.

A user message holds ``FilePart`` references (``agents_core.events``); before a model
call the agent reads the bytes of the files its request carries from the runner's
``BlobStore`` and hands them to the model with the request (``LlmRequest.blobs``).
Blobs are addressed by the SHA-256 of their bytes, so a blob never changes.
"""

from __future__ import annotations

import hashlib
from typing import Protocol

from agents_core.exceptions import ConfigurationError
from agents_core.llm.contracts import BaseLlm, LlmRequest

__all__ = ["BlobStore", "InMemoryBlobStore", "blob_id_of", "with_blobs"]


class BlobStore(Protocol):
    """Reads stored files by id. Raises ``KeyError`` for an id it does not hold."""

    async def read(self, blob_id: str) -> bytes: ...


def blob_id_of(data: bytes) -> str:
    """The id of ``data``: its SHA-256, as 64 hex digits."""
    return hashlib.sha256(data).hexdigest()


class InMemoryBlobStore:
    """Blobs in a dict: for tests and scripts."""

    def __init__(self) -> None:
        self._blobs: dict[str, bytes] = {}

    def put(self, data: bytes) -> str:
        blob_id = blob_id_of(data)
        self._blobs[blob_id] = data
        return blob_id

    async def read(self, blob_id: str) -> bytes:
        return self._blobs[blob_id]


async def with_blobs(request: LlmRequest, model: BaseLlm, store: BlobStore | None) -> LlmRequest:
    """``request`` with the bytes of its attachments, read from ``store``; unchanged
    when it has none. A model that takes no attachments, or no store to read them
    from, is a ``ConfigurationError`` (terminal: asking again does not help)."""
    wanted = {a.blob_id for a in request.attachments} - request.blobs.keys()
    if not wanted:
        return request
    if not model.accepts_attachments:
        raise ConfigurationError(
            "this model does not accept images or files: pick a model that does (for a "
            "model config, set its vision option) or send the message without attachments"
        )
    if store is None:
        raise ConfigurationError("the message has attachments but the runner has no blob store")
    blobs = dict(request.blobs)
    for blob_id in sorted(wanted):
        try:
            blobs[blob_id] = await store.read(blob_id)
        except KeyError as exc:
            raise ConfigurationError(f"attached file {blob_id} is not stored") from exc
    return request.model_copy(update={"blobs": blobs})
