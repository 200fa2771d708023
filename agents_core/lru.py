"""``SizedLru``: what a process keeps of the sessions it served lately, bounded by how
many and by how big they are in all (``HistoryCache``, Studio's session cache)."""

from __future__ import annotations

import threading
from collections import OrderedDict


class SizedLru[K, V]:
    """Values by key, the least recently used dropped first: at most ``max_items`` of
    them and, when given, values of ``max_size`` in all (each value's size is given as
    it is put; one bigger than the whole bound is not kept). Thread-safe."""

    def __init__(self, max_items: int | None = None, max_size: int | None = None) -> None:
        self.max_items, self.max_size = max_items, max_size
        self._kept: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        """The value kept under ``key``, now the most recently used."""
        with self._lock:
            found = self._kept.get(key)
            if found is None:
                return None
            self._kept.move_to_end(key)
            return found[0]

    def pop(self, key: K) -> V | None:
        with self._lock:
            found = self._kept.pop(key, None)
            if found is None:
                return None
            self._size -= found[1]
            return found[0]

    def put(self, key: K, value: V, size: int) -> None:
        """Keep ``value`` under ``key`` (in place of what was), the most recently used."""
        with self._lock:
            if (old := self._kept.pop(key, None)) is not None:
                self._size -= old[1]
            if self.max_size is not None and size > self.max_size:
                return
            self._kept[key] = (value, size)
            self._size += size
            while (self.max_items is not None and len(self._kept) > self.max_items) or (
                self.max_size is not None and self._size > self.max_size
            ):
                _, (_, dropped) = self._kept.popitem(last=False)
                self._size -= dropped

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()
            self._size = 0

    @property
    def size(self) -> int:
        """The sizes of the values kept, all told."""
        return self._size

    def __len__(self) -> int:
        return len(self._kept)
