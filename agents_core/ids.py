"""Ids for what a run makes: events, spans, invocations, calls."""

from __future__ import annotations

import os
from collections.abc import Iterator

IDS_A_READ = 64
"""Ids made from one read of the operating system's randomness."""

_ids: Iterator[str] = iter(())
"""Ids read and not yet handed out."""


def new_id() -> str:
    """A random UUID4, as 32 hex digits: ``uuid.uuid4().hex`` without building a
    ``UUID`` (a turn makes some fifteen ids, and the object cost 4x the randomness).

    The randomness is the operating system's, read for ``IDS_A_READ`` ids at a time: a
    read an id was a system call an id, about 1% of a fresh turn (``bench/README.md``,
    *Runner: ids read in batches*). Safe across threads (a list iterator hands each id out
    once; two threads refilling at once each read fresh bytes) and across ``fork`` (a
    child forgets the ids its parent read and had not handed out)."""
    found = next(_ids, None)
    return found if found is not None else _read_ids()


def _read_ids() -> str:
    """Fresh ids for ``new_id``: the first, and the rest kept for its next calls."""
    global _ids
    raw = bytearray(os.urandom(16 * IDS_A_READ))
    ids = []
    for at in range(0, len(raw), 16):
        raw[at + 6] = raw[at + 6] & 0x0F | 0x40  # version 4
        raw[at + 8] = raw[at + 8] & 0x3F | 0x80  # the RFC 4122 variant
        ids.append(raw[at : at + 16].hex())
    _ids = iter(ids[1:])
    return ids[0]


def _forget_ids() -> None:
    global _ids
    _ids = iter(())


os.register_at_fork(after_in_child=_forget_ids)
