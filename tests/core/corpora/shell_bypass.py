"""Commands that try to run something besides the allowlisted program.

Each string is a template: ``{canary}`` is a path that must never come to exist. With
``echo``, ``ls`` and ``true`` allowlisted, every one of these must either be refused or
run the allowlisted program with the metacharacters as plain text.
"""

from __future__ import annotations

SEPARATORS = [
    "echo hi; touch {canary}",
    "echo hi;touch {canary}",
    "echo hi && touch {canary}",
    "echo hi || touch {canary}",
    "echo hi | touch {canary}",
    "echo hi |& touch {canary}",
    "echo hi & touch {canary}",
    "echo hi\ntouch {canary}",
    "echo hi\rtouch {canary}",
    "echo hi\\\ntouch {canary}",
    "echo hi %0a touch {canary}",
    "echo hi #\ntouch {canary}",
    "ls -la; touch {canary}",
    "ls; touch {canary}",
    "true && touch {canary}",
    "true\ntouch {canary}",
    "echo;touch {canary}",
    "echo|touch {canary}",
    "echo&&touch {canary}",
    "ec''ho hi; touch {canary}",
]

SUBSTITUTIONS = [
    "echo $(touch {canary})",
    "echo `touch {canary}`",
    "echo ${{IFS}}$(touch {canary})",
    "echo <(touch {canary})",
    "echo >(touch {canary})",
    "echo $((1+1)); touch {canary}",
    "echo$(touch {canary})",
    "echo`touch {canary}`",
    "$(touch {canary})",
    "`touch {canary}`",
    "${{SHELL}} -c 'touch {canary}'",
    "$SHELL -c 'touch {canary}'",
    "{{touch,{canary}}}",
    "echo *; touch {canary}",
]

REDIRECTIONS = [
    "echo hi > {canary}",
    "echo hi >> {canary}",
    "echo hi 2> {canary}",
    "echo hi &> {canary}",
    "echo hi >| {canary}",
    "echo hi >{canary}",
    "echo hi | tee {canary}",
    "echo hi; exec 3>{canary}",
    "ls > {canary}",
]

OTHER_PROGRAMS = [
    "touch {canary}",
    "TOUCH {canary}",
    "touch\t{canary}",
    "'touch' {canary}",
    '"touch" {canary}',
    "t\\ouch {canary}",
    "/usr/bin/touch {canary}",
    "/bin/touch {canary}",
    "../../usr/bin/touch {canary}",
    "./touch {canary}",
    "~/touch {canary}",
    "/usr/bin/echo hi; touch {canary}",
    "./echo hi",
    "bin/echo hi",
    "sh -c 'touch {canary}'",
    "/bin/sh -c 'touch {canary}'",
    "bash -c 'touch {canary}'",
    "env touch {canary}",
    "env -i touch {canary}",
    "xargs touch {canary}",
    "exec touch {canary}",
    "eval 'touch {canary}'",
    "command touch {canary}",
    "nohup touch {canary}",
    "timeout 5 touch {canary}",
    "busybox touch {canary}",
    'python3 -c \'open("{canary}", "w")\'',
    "PATH=/usr/bin touch {canary}",
    "FOO=bar echo hi; touch {canary}",
    "echo\\ ;touch {canary}",
    "echo\u00a0hi; touch {canary}",
    "cat /etc/passwd",
    "echo hi; cat /etc/passwd",
]

MALFORMED = [
    "echo 'unterminated; touch {canary}",
    'echo "unterminated; touch {canary}',
    "echo hi\x00touch {canary}",
    "   ",
    "\n",
]

BYPASS_TEMPLATES = SEPARATORS + SUBSTITUTIONS + REDIRECTIONS + OTHER_PROGRAMS + MALFORMED


def bypass_commands(canary: str) -> list[str]:
    return [template.format(canary=canary) for template in BYPASS_TEMPLATES]
