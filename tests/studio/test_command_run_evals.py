"""``manage.py run_evals``: runs an eval to its end in-process, prints a table, writes
JSON, and exits 0 at or over the threshold, 1 under it, 2 on bad arguments."""

from __future__ import annotations

import json
import subprocess
import sys
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from studio import evals, runs, services
from studio.models import Run, RunStatus, Session
from tests.support.eval_runs import case, echo_agent, make_dataset

pytestmark = pytest.mark.django_db(transaction=True)

CASES = [case("greets", "hello", expect="hello"), case("strict", "x", expect="never said")]


@pytest.fixture(autouse=True)
def _executor_restored() -> Any:
    """The command binds an inline executor of its own; the next test gets a fresh one."""
    chosen = runs._executor
    yield
    runs._executor = chosen


@pytest.fixture
def setup(ada: User) -> None:
    agent = echo_agent(ada)
    services.save_agent_spec(agent, {**agent.current_version.spec, "instruction": "v2"})
    make_dataset(ada, "smoke", CASES)


def run_evals(*args: str) -> tuple[str, CommandError | None]:
    out = StringIO()
    try:
        call_command("run_evals", *args, stdout=out, stderr=StringIO())
    except CommandError as exc:
        return out.getvalue(), exc
    return out.getvalue(), None


def test_at_or_over_the_threshold_it_prints_the_table_writes_json_and_exits_0(
    ada: User, setup: None, tmp_path: Path
) -> None:
    path = tmp_path / "eval.json"
    out, error = run_evals(
        "--dataset", "smoke", "--agent", "echo@1", "--fail-under", "0.5", "--json", str(path),
        "--repeats", "2", "--concurrency", "2",
    )  # fmt: skip
    assert error is None, error
    lines = out.splitlines()
    assert lines[0].startswith("eval ") and "echo@1 on smoke v1, succeeded" in lines[0]
    rows = [line.split() for line in lines[2:6]]
    assert [(row[0], row[1], row[2]) for row in rows] == [
        ("greets", "#1", "passed"), ("greets", "#2", "passed"),
        ("strict", "#1", "failed"), ("strict", "#2", "failed"),
    ]  # fmt: skip
    assert "pass rate 0.500; pass@2 0.500" in lines[6]
    assert lines[-1] == "pass rate 0.500 >= 0.5: ok"
    document = json.loads(path.read_text())
    assert document["eval"]["agent_version"] == 1 and document["eval"]["repeats"] == 2
    assert len(document["results"]) == 4
    assert document["eval"]["summary"]["pass_rate"] == 0.5
    sessions = Session.objects.filter(owner=ada)
    assert sessions.count() == 4 and {s.agent_version.number for s in sessions} == {1}


def test_under_the_threshold_it_exits_1(ada: User, setup: None) -> None:
    out, error = run_evals("--dataset", "smoke", "--agent", "echo", "--fail-under", "0.9")
    assert error is not None and error.returncode == 1
    assert str(error) == "pass rate 0.500 is under 0.9"
    assert "strict" in out  # the table is printed all the same
    _, error = run_evals("--dataset", "smoke", "--agent", "echo")  # default: all must pass
    assert error is not None and error.returncode == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--dataset", "nope", "--agent", "echo"], "ada has no dataset 'nope'"),
        (["--dataset", "smoke", "--agent", "ghost"], "no agent 'ghost'"),
        (["--dataset", "smoke", "--agent", "echo@7"], "agent 'echo' has no version 7"),
        (["--dataset", "smoke", "--agent", "echo@x"], "the version after '@' must be a number"),
        (["--dataset", "smoke", "--agent", "echo", "--fail-under", "1.5"], "--fail-under must"),
        (["--dataset", "smoke", "--agent", "echo", "--fail-under", "most"], "--fail-under must"),
        (["--dataset", "smoke", "--agent", "echo", "--user", "zed"], "no user 'zed'"),
        (["--dataset", "smoke", "--agent", "echo", "--repeats", "0"], "--repeats must"),
    ],
)
def test_bad_arguments_exit_2_with_a_clear_message(
    ada: User, setup: None, args: list[str], message: str
) -> None:
    _, error = run_evals(*args)
    assert error is not None and error.returncode == 2
    assert message in str(error)
    assert not Session.objects.exists()  # nothing started


def test_an_agent_name_two_users_share_needs_user(ada: User, bob: User, setup: None) -> None:
    echo_agent(bob)
    _, error = run_evals("--dataset", "smoke", "--agent", "echo")
    assert error is not None and error.returncode == 2 and "pass --user" in str(error)
    _, error = run_evals(
        "--dataset", "smoke", "--agent", "echo", "--user", "ada", "--fail-under", "0"
    )
    assert error is None


def test_the_process_exit_code_is_2_on_a_bad_threshold() -> None:
    done = subprocess.run(
        [sys.executable, "manage.py", "run_evals", "--dataset", "d", "--agent", "a",
         "--fail-under", "2"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "--fail-under must be from 0 to 1, not 2" in done.stderr


def test_it_executes_only_its_own_evals_runs(ada: User, bob: User, setup: None) -> None:
    theirs = evals.create_eval(
        bob, agent=echo_agent(bob), dataset=make_dataset(bob, "theirs", CASES), concurrency=1
    )
    _, error = run_evals(
        "--dataset", "smoke", "--agent", "echo", "--user", "ada", "--fail-under", "0"
    )
    assert error is None
    waiting = Run.objects.filter(session__eval_results__eval_run=theirs)
    assert [run.status for run in waiting] == [RunStatus.QUEUED]  # a server's to execute
    assert theirs.results.filter(status="pending").count() == 1
