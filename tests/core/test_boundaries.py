"""The SDK stands alone: importing it loads no Django, and the README example runs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = ("django", "channels", "rest_framework", "daphne", "studio")


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_importing_agents_core_loads_no_django_channels_drf_daphne_or_studio() -> None:
    code = "import json, sys, agents_core; print(json.dumps(sorted(sys.modules)))"

    done = run_python(code)

    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout)
    assert "agents_core.runner" in loaded
    assert [m for m in loaded if m.split(".")[0] in FORBIDDEN] == []


def readme_example() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"^```python\n(.*?)^```", readme, flags=re.DOTALL | re.MULTILINE)
    assert found is not None, "README.md has no python example"
    return found.group(1)


def test_the_readme_example_runs_and_prints_the_turns_stored_events() -> None:
    example = readme_example()
    assert len(example.strip().splitlines()) <= 15

    done = run_python(example)

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "1 user_message What is 2 + 3?",
        "2 agent_start []",
        "3 agent_message [ToolCall(id='call_1', name='add', args={'a': 2, 'b': 3})]",
        "4 tool_response [ToolResult(call_id='call_1', name='add', output='5', is_error=False)]",
        "5 agent_message 2 + 3 = 5",
        "6 agent_end []",
    ]
