"""``manage.py run_evals``: run an agent version against a dataset to the end, in this
process, print a summary table, and exit 1 when the pass rate is under a threshold, so
a deploy can be gated on it.

    python manage.py run_evals --dataset smoke --agent helper@3 --fail-under 0.9 --json out.json

Exit codes: 0 the pass rate reached ``--fail-under`` (default 1.0: every judged case
passed), 1 it did not (or the eval did not run to its end), 2 bad arguments (an
unknown user, agent, version or dataset, a threshold outside 0..1), with the reason.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.management.base import BaseCommand, CommandError, CommandParser

from studio import evals
from studio.api.eval_serializers import eval_payload, result_payloads
from studio.errors import StudioError
from studio.evals.inprocess import run_to_end
from studio.models import Agent, AgentVersion
from studio.models.evals import MAX_CONCURRENCY, MAX_REPEATS, Dataset, EvalRun, EvalStatus

BAD_ARGUMENTS = 2
UNDER_THRESHOLD = 1


def bad(message: str) -> CommandError:
    return CommandError(message, returncode=BAD_ARGUMENTS)


class Command(BaseCommand):
    help = (
        "Run an agent version against a dataset to the end, print a summary table, and "
        "exit 1 if the pass rate is under --fail-under (2 on bad arguments)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", required=True, help="the dataset's name")
        parser.add_argument(
            "--agent", required=True, help="NAME or NAME@VERSION (default: its current version)"
        )
        parser.add_argument("--user", help="the owner's username (needed if names clash)")
        parser.add_argument(
            "--fail-under",
            default="1.0",
            help="the pass rate (0..1) under which it exits 1; default 1.0",
        )
        parser.add_argument("--json", help="also write the eval, summary and results here")
        parser.add_argument("--repeats", type=int, default=1, help="runs per case (pass@k)")
        parser.add_argument("--concurrency", type=int, default=4, help="cases at once")
        parser.add_argument(
            "--timeout", type=float, default=3600.0, help="give up after this many seconds"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        threshold = _threshold(options["fail_under"])
        _bounded("--repeats", options["repeats"], MAX_REPEATS)
        _bounded("--concurrency", options["concurrency"], MAX_CONCURRENCY)
        owner = _owner(options["user"])
        agent, version = _agent(options["agent"], owner)
        dataset = _dataset(options["dataset"], agent.owner)

        def start() -> EvalRun:
            try:
                return evals.create_eval(
                    agent.owner,
                    agent=agent,
                    version=version,
                    dataset=dataset,
                    concurrency=options["concurrency"],
                    repeats=options["repeats"],
                )
            except StudioError as exc:
                raise bad(exc.message) from None

        try:
            eval_run = asyncio.run(run_to_end(start, timeout_s=options["timeout"]))
        except TimeoutError:
            raise CommandError(
                f"the eval did not end within {options['timeout']} s", returncode=UNDER_THRESHOLD
            ) from None
        results = result_payloads(eval_run.results.order_by("case_index", "repeat"))
        self._table(eval_run, results)
        if options["json"]:
            document = {"eval": eval_payload(eval_run), "results": results}
            Path(options["json"]).write_text(json.dumps(document, indent=2, default=str))
        rate = eval_run.summary.get("pass_rate")
        if eval_run.status != EvalStatus.SUCCEEDED:
            raise CommandError(f"the eval {eval_run.status}", returncode=UNDER_THRESHOLD)
        if rate is None or rate < threshold:
            shown = "none" if rate is None else f"{rate:.3f}"
            raise CommandError(
                f"pass rate {shown} is under {threshold}", returncode=UNDER_THRESHOLD
            )
        self.stdout.write(f"pass rate {rate:.3f} >= {threshold}: ok")

    def _table(self, eval_run: EvalRun, results: list[dict[str, Any]]) -> None:
        version = eval_run.agent_version
        self.stdout.write(
            f"eval {eval_run.pk}: {version.agent.name}@{version.number} on "
            f"{eval_run.dataset_version}, {eval_run.status}"
        )
        width = max([len("case"), *(len(r["case_name"]) for r in results)]) + 4
        self.stdout.write(
            f"{'case':<{width}} {'status':<10} {'score':>6} {'cost':>14} {'latency':>9}"
        )
        for r in results:
            name = (
                r["case_name"] if eval_run.repeats == 1 else f"{r['case_name']} #{r['repeat'] + 1}"
            )
            self.stdout.write(
                f"{name:<{width}} {r['status']:<10} {_num(r['score'], '.2f'):>6} "
                f"{_cost(r['cost']):>14} {_num(r['latency_s'], '.2f', 's'):>9}"
            )
        s = eval_run.summary
        counts = s["counts"]
        self.stdout.write(
            f"passed {counts['passed']}, failed {counts['failed']}, error {counts['error']}, "
            f"cancelled {counts['cancelled']}; pass rate {_num(s['pass_rate'], '.3f')}; "
            f"pass@{s['pass_at_k']['k']} {_num(s['pass_at_k']['value'], '.3f')}; "
            f"cost {_cost(s['cost']['total'])}{'' if s['cost']['complete'] else ' (incomplete)'}; "
            f"tokens {s['tokens']['total']}; latency p50 {_num(s['latency_s']['p50'], '.2f', 's')} "
            f"p95 {_num(s['latency_s']['p95'], '.2f', 's')}"
        )


def _num(value: float | None, spec: str, unit: str = "") -> str:
    return "-" if value is None else f"{value:{spec}}{unit}"


def _cost(value: str | Decimal | None) -> str:
    return "-" if value is None else f"{Decimal(value).normalize():f}"


def _threshold(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise bad(f"--fail-under must be a number from 0 to 1, not {raw!r}") from None
    if not 0.0 <= value <= 1.0:
        raise bad(f"--fail-under must be from 0 to 1, not {raw}")
    return value


def _bounded(flag: str, value: int, most: int) -> None:
    if not 1 <= value <= most:
        raise bad(f"{flag} must be from 1 to {most}, not {value}")


def _owner(username: str | None) -> AbstractBaseUser | None:
    if username is None:
        return None
    owner = get_user_model()._default_manager.filter(username=username).first()
    if owner is None:
        raise bad(f"no user {username!r}")
    return owner


def _agent(ref: str, owner: AbstractBaseUser | None) -> tuple[Agent, AgentVersion | None]:
    name, at, number = ref.partition("@")
    agents = Agent.objects.select_related("owner", "current_version")
    if owner is not None:
        agents = agents.filter(owner_id=owner.pk)
    try:
        found = list(agents.filter(pk=uuid.UUID(name)))
    except ValueError:
        found = list(agents.filter(name=name))
    if not found:
        raise bad(f"no agent {name!r}" + ("" if owner is None else f" of {owner.get_username()}"))
    if len(found) > 1:
        owners = ", ".join(sorted(a.owner.get_username() for a in found))
        raise bad(f"several users have an agent {name!r} ({owners}): pass --user")
    agent = found[0]
    if not at:
        return agent, None
    if not number.isdigit():
        raise bad(f"the version after '@' must be a number, not {number!r}")
    version = agent.versions.filter(number=int(number)).first()
    if version is None:
        raise bad(f"agent {name!r} has no version {number}")
    return agent, version


def _dataset(name: str, owner: AbstractBaseUser) -> Dataset:
    found = Dataset.objects.filter(owner_id=owner.pk, name=name).first()
    if found is None:
        raise bad(f"{owner.get_username()} has no dataset {name!r}")
    return found
