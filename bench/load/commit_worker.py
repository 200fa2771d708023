"""``manage.py run_worker`` plus a commit clock, for ``bench.load.run``.

Each event the worker stores appends ``<event id> <time.time_ns()>`` to the file
named by ``LOAD_COMMITS`` once its transaction has committed (``bench.commit_clock``).
The viewers stamp receipts with the same wall clock, on the same machine.
"""

from __future__ import annotations

import os
import sys
import time

import django

from bench import commit_clock


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
    django.setup()
    commit_clock.install(
        os.environ["LOAD_COMMITS"], key=lambda stored: stored.id, clock=time.time_ns
    )
    from django.core.management import execute_from_command_line

    execute_from_command_line([sys.argv[0], "run_worker", *sys.argv[1:]])


if __name__ == "__main__":
    main()
