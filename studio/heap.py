"""A long-lived process's start-up heap, kept out of the garbage collector's way.

A Studio server imports Django, Channels, DRF, LangChain and the provider SDKs at
start-up: some 160,000 objects that live as long as the process. CPython's full
(generation 2) collection walks every tracked object, so each one cost ~65 ms on this
2-core machine, and it landed on whatever was in flight: in ``bench/live_fanout`` at
100 viewers, the slowest live deliveries were those that waited on one (139 to 265 ms).
``freeze_startup_heap`` moves what start-up left to the collector's permanent
generation (``gc.freeze``), so a full collection walks only what was made since.

While a process starts, automatic collection is off (``pause_collection``, from its
entry point to ``freeze_startup_heap``): start-up makes objects that live as long as
the process, so the ~400 young and 3 full collections it ran found almost nothing
(~50 objects) and cost ~0.1 s of each server's and command's start-up.
"""

from __future__ import annotations

import gc


def pause_collection() -> None:
    """Turn automatic collection off until ``freeze_startup_heap``: call first thing in
    a process's entry point."""
    gc.disable()


def freeze_startup_heap() -> None:
    """Collect the garbage of start-up, then freeze what is left, and turn automatic
    collection (back) on. Frozen objects are still freed by reference counting; only a
    cycle among them is never collected, and start-up's modules, classes and settings
    live as long as the process anyway. Call once, at the end of a process's start-up."""
    gc.collect()
    gc.freeze()
    gc.enable()
