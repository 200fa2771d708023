"""The ``shell`` tool: runs one allowlisted program, and never a shell.

The command is split into words the way a POSIX shell would (``shlex.split``), and the
first word must be the bare name of an allowlisted program; it is looked up only on the
settings' ``search_path`` and executed directly. Since no shell runs, ``;``, ``|``,
``&&``, redirections, ``$VAR``, ``$(...)``, backticks, globs and newlines are plain
text handed to that one program. The allowlist is required: with none, the tool cannot
be built. Programs whose purpose is to run other programs (shells, ``env``, ``xargs``,
``sudo`` ...) are refused in the allowlist, because allowing one would allow everything.
Arguments are not inspected: an allowed program keeps all its powers (``find -exec``,
``git -c``, an interpreter's ``-c``), so allow only programs whose every use is fine.

The program runs in a new session with an environment holding only ``PATH`` (the
``search_path``) and the variables named in ``env_allowlist``, copied from this
process. When the call ends (exit, timeout or cancellation) the whole process group
is killed, background children included; a process that leaves the group with its
own ``setsid`` escapes this, and needs an OS-level sandbox.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PositiveFloat,
    PositiveInt,
    field_validator,
)

from agents_core.exceptions import (
    ConfigurationError,
    ToolArgumentsError,
    ToolExecutionError,
    ToolTimeoutError,
)
from agents_core.tools.base import BaseTool, ToolContext, args_schema, parse_args

OUTPUT_TRUNCATED = "[... output truncated]"
_LAUNCHERS = frozenset(
    {
        *("sh", "bash", "dash", "zsh", "ksh", "mksh", "csh", "tcsh", "fish", "ash", "busybox"),
        *("env", "xargs", "nohup", "nice", "ionice", "setsid", "stdbuf", "timeout", "watch"),
        *("sudo", "su", "doas", "runuser", "chroot", "unshare", "nsenter", "flock", "script"),
        *("strace", "ltrace", "exec", "eval", "command"),
    }
)
"""Programs that exist to run other programs: allowlisting one would allow everything."""
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DRAIN_S = 1.0
"""How long output may keep arriving once the process group is dead."""
_GRACE_S = 5.0
"""Headroom of the tool's outer timeout over the command's own, so ours fires first."""


class CommandNotAllowedError(ToolExecutionError):
    """The command's program is not on the shell tool's allowlist."""

    code = "command_not_allowed"


class ShellSettings(BaseModel):
    """Configuration of the shell tool; serialisable, so specs can carry it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = False
    """The tool refuses to be built unless this is set."""
    allowlist: tuple[str, ...] = ()
    """Bare program names the model may run; required when enabled."""
    timeout_s: PositiveFloat = 30.0
    max_output_chars: PositiveInt = 20_000
    """Combined stdout and stderr kept; the rest is cut, with a marker."""
    env_allowlist: tuple[str, ...] = ()
    """Variables copied from this process's environment into the command's."""
    cwd: Path | None = None
    """Working directory of the command; ``None`` keeps this process's."""
    search_path: str = "/usr/local/bin:/usr/bin:/bin"
    """Where allowlisted programs are looked up; also the command's ``PATH``."""

    @field_validator("allowlist")
    @classmethod
    def _bare_program_names(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        for name in names:
            if not name or "/" in name or name in (".", ".."):
                raise ValueError(f"{name!r} is not a bare program name")
            if name in _LAUNCHERS:
                raise ValueError(f"{name!r} runs other programs, so it cannot be allowlisted")
        return names

    @field_validator("env_allowlist")
    @classmethod
    def _variable_names(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        for name in names:
            if not _ENV_NAME.fullmatch(name) or name == "PATH":
                raise ValueError(f"{name!r} cannot be passed through (PATH is search_path)")
        return names

    @field_validator("search_path")
    @classmethod
    def _absolute_directories(cls, search_path: str) -> str:
        if not all(Path(d).is_absolute() for d in search_path.split(":")):
            raise ValueError("search_path must list absolute directories")
        return search_path


class ShellResult(BaseModel):
    """What the shell tool returns for a command that ran to its end."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    exit_code: int
    output: str
    """stdout and stderr, interleaved as written."""
    truncated: bool = False


class _ShellArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    command: str = Field(
        min_length=1, max_length=10_000, description="Program and arguments, e.g. 'ls -la src'."
    )


class ShellTool(BaseTool):
    """Runs one allowlisted program per call; see the module docstring for the rules."""

    name = "shell"

    def __init__(self, settings: ShellSettings) -> None:
        if not settings.enabled:
            raise ConfigurationError("the shell tool is disabled; enable it in its settings")
        if not settings.allowlist:
            raise ConfigurationError("the shell tool needs an allowlist of programs")
        if settings.cwd is not None and not settings.cwd.is_dir():
            raise ConfigurationError(f"shell cwd {str(settings.cwd)!r} is not a directory")
        self.settings = settings
        self.timeout_s = settings.timeout_s + _GRACE_S
        self.description = (
            f"Run one program: {', '.join(settings.allowlist)}. No shell is involved: "
            "pipes, redirections, ';', '&&', variables, globs and substitutions are passed "
            "to the program as plain text. Output is capped at "
            f"{settings.max_output_chars} characters; commands are killed after "
            f"{settings.timeout_s}s."
        )

    def parameters_schema(self) -> dict[str, Any]:
        return args_schema(_ShellArgs)

    async def arun(self, args: dict[str, Any], tool_context: ToolContext) -> ShellResult:
        command = parse_args(_ShellArgs, args).command
        argv = self._argv(command)
        return await self._execute(argv)

    def _argv(self, command: str) -> list[str]:
        """The command's words, with the program replaced by its absolute path."""
        if "\x00" in command:
            raise ToolArgumentsError("command contains a NUL byte")
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise ToolArgumentsError(f"cannot split the command into words: {exc}") from exc
        if not argv:
            raise ToolArgumentsError("the command is empty")
        program = argv[0]
        if program not in self.settings.allowlist:
            allowed = ", ".join(self.settings.allowlist)
            raise CommandNotAllowedError(f"{program!r} is not allowed; allowed: {allowed}")
        found = shutil.which(program, path=self.settings.search_path)
        if found is None:
            raise ToolExecutionError(f"{program!r} is allowed but not installed")
        return [found, *argv[1:]]

    async def _execute(self, argv: list[str]) -> ShellResult:
        transport, command = await self._start(argv)
        timed_out = False
        try:
            async with asyncio.timeout(self.settings.timeout_s):
                await command.exited.wait()
        except TimeoutError:
            timed_out = True
        finally:
            await _end(transport, command)
        text, truncated = command.output()
        if timed_out:
            raise ToolTimeoutError(
                f"command timed out after {self.settings.timeout_s}s and was killed; "
                f"output so far:\n{text}"
            )
        exit_code = transport.get_returncode()
        return ShellResult(
            exit_code=-1 if exit_code is None else exit_code, output=text, truncated=truncated
        )

    async def _start(self, argv: list[str]) -> tuple[asyncio.SubprocessTransport, _Command]:
        """Start the program in a new session. A cancellation that arrives meanwhile
        waits for the start, so that the new process group can still be killed."""
        limit = self.settings.max_output_chars
        starting = asyncio.ensure_future(
            asyncio.get_running_loop().subprocess_exec(
                lambda: _Command(limit),
                *argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=self.settings.cwd,
                env=self._environment(),
                start_new_session=True,
            )
        )
        try:
            return await asyncio.shield(starting)
        except asyncio.CancelledError:
            with contextlib.suppress(OSError):
                await _end(*await starting)
            raise
        except OSError as exc:
            program = Path(argv[0]).name
            raise ToolExecutionError(f"cannot start {program!r}: {exc.strerror}") from exc

    def _environment(self) -> dict[str, str]:
        env = {"PATH": self.settings.search_path}
        env.update({k: os.environ[k] for k in self.settings.env_allowlist if k in os.environ})
        return env


async def _end(transport: asyncio.SubprocessTransport, command: _Command) -> None:
    """Kill the process group (background children included), then wait, at most
    ``_DRAIN_S``, for the last output and the pipes to close."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(transport.get_pid(), signal.SIGKILL)
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(_DRAIN_S):
            await command.closed.wait()
    transport.close()


class _Command(asyncio.SubprocessProtocol):
    """Collects a command's output, keeping the first ``limit`` characters, and tells
    when the program has exited (``exited``) and its pipes are closed (``closed``).
    The program's exit is what counts: a background child may hold the pipes open."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.kept = bytearray()
        self.dropped = 0
        self.exited = asyncio.Event()
        self.closed = asyncio.Event()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        room = max(self.limit * 4 - len(self.kept), 0)  # UTF-8: at most 4 bytes a character
        self.kept += data[:room]
        self.dropped += len(data) - min(room, len(data))

    def process_exited(self) -> None:
        self.exited.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed.set()

    def output(self) -> tuple[str, bool]:
        text = self.kept.decode("utf-8", errors="replace")
        if self.dropped == 0 and len(text) <= self.limit:
            return text, False
        return f"{text[: self.limit]}\n{OUTPUT_TRUNCATED}", True


def shell_tool(settings: ShellSettings) -> BaseTool:
    """The shell tool for ``settings``.

    Raises:
        ConfigurationError: if the shell is not enabled, has no allowlist, or its
            ``cwd`` is not a directory.
    """
    return ShellTool(settings)
