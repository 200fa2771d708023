"""``manage.py run_worker`` plus a commit clock, for ``bench.load.run``.

Every event the session service stores goes through
``studio.session_service.append_event_sync``; wrapped here, each appends
``<event id> <time.time_ns()>`` to the file named by ``LOAD_COMMITS`` once its
transaction has committed (``on_commit``: at once outside a transaction). The viewers
stamp receipts with the same wall clock, on the same machine. Nothing else changes.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any

import django


def install_commit_clock(path: str) -> None:
    from django.db import transaction

    from studio import session_service

    append_event_sync = session_service.append_event_sync
    log = open(path, "a", buffering=1)  # noqa: SIM115 (process-long)
    lock = threading.Lock()

    def stamp(event_id: str) -> None:
        committed = time.time_ns()
        with lock:
            log.write(f"{event_id} {committed}\n")

    def timed_append_event_sync(session_key: str, event: Any) -> Any:
        stored = append_event_sync(session_key, event)
        transaction.on_commit(lambda: stamp(stored.id))
        return stored

    session_service.append_event_sync = timed_append_event_sync


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
    django.setup()
    install_commit_clock(os.environ["LOAD_COMMITS"])
    from django.core.management import execute_from_command_line

    execute_from_command_line([sys.argv[0], "run_worker", *sys.argv[1:]])


if __name__ == "__main__":
    main()
