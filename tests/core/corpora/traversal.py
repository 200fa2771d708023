"""A jail with canaries around it, and the traversal strings thrown at it.

Layout under ``tmp``::

    canary.txt  elsewhere/canary.txt  elsewhere/deep/canary.txt  <root>-x/canary.txt
    <root>/     inside.txt  sub/nested.txt  and symlinks: inside the root (allowed),
                leaving it (relative, absolute, dangling, chained), and loops

Every canary holds ``SECRET``; nothing inside the root does.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

SECRET = "CANARY-7f3a9c"
"""Text found only outside the root: it must never appear in a tool's output."""
LEAK_MARKERS = ("elsewhere", "-x/", SECRET)
"""Names only reachable outside the root; an output may echo them only if the input did."""

_LINKS = {
    "l_in": "sub",
    "l_file_in": "inside.txt",
    "l_dangling_in": "missing.txt",
    "sub/up": "..",
    "sub/upup": "../..",
    "sub/deeper/l_back": "../../..",
    "l_out_file": "../canary.txt",
    "l_out_dir": "../elsewhere",
    "l_sibling": "../{root}-x",
    "l_parent": "..",
    "l_chain": "sub/upup",
    "l_dangling_out": "../elsewhere/missing.txt",
    "loop_a": "loop_b",
    "loop_b": "loop_a",
    "self_loop": "self_loop",
    "dir_loop": ".",
}


@dataclass(frozen=True, slots=True)
class Sandbox:
    root: Path
    outside: Path
    """The directory holding the root and every canary."""

    def snapshot(self) -> dict[str, tuple[str, bytes]]:
        """Everything outside the root: kind and content (or link target) of each path."""
        found: dict[str, tuple[str, bytes]] = {}
        pending = [str(self.outside)]
        while pending:
            with os.scandir(pending.pop()) as entries:
                for entry in entries:
                    if entry.path == str(self.root):
                        continue
                    if entry.is_symlink():
                        found[entry.path] = ("link", os.readlink(entry.path).encode())
                    elif entry.is_dir():
                        found[entry.path] = ("dir", b"")
                        pending.append(entry.path)
                    else:
                        with open(entry.path, "rb") as file:
                            found[entry.path] = ("file", file.read())
        return found


def build_sandbox(tmp: Path) -> Sandbox:
    root = tmp / "root"
    for path in (
        tmp / "canary.txt",
        tmp / "elsewhere" / "canary.txt",
        tmp / "elsewhere" / "deep" / "canary.txt",
        tmp / "root-x" / "canary.txt",
    ):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{SECRET}\n")
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "inside.txt").write_text("hello from inside\n")
    (root / "sub" / "nested.txt").write_text("nested hello\n")
    for link, target in _LINKS.items():
        (root / link).symlink_to(target.format(root=root.name))
    (root / "l_out_abs").symlink_to(tmp / "elsewhere" / "canary.txt")
    (root / "l_in_abs").symlink_to(root / "sub")
    return Sandbox(root=root, outside=tmp)


def traversal_cases(sandbox: Sandbox) -> list[str]:
    """Over 300 distinct path strings that try to leave the root."""
    bases = _escapes(sandbox)
    decorated = [
        variant
        for base in bases
        for variant in (base, f"./{base}", f"sub/../{base}", f"{base}/", f"l_in/../{base}")
    ]
    deep = [f"sub/{'../' * depth}canary.txt" for depth in range(1, 13)]
    return list(dict.fromkeys(decorated + deep))


def _escapes(sandbox: Sandbox) -> list[str]:
    root, out = sandbox.root, sandbox.outside
    return [
        *_lexical(root.name),
        *_encoded(),
        *_absolute(root, out),
        *_through_symlinks(),
    ]


def _lexical(root_name: str) -> list[str]:
    return [
        "..",
        "../",
        "../..",
        "../canary.txt",
        "../elsewhere/canary.txt",
        "../elsewhere/deep/canary.txt",
        f"../{root_name}-x/canary.txt",
        f"../{root_name}/../canary.txt",
        "../" * 10 + "etc/passwd",
        "sub/../../canary.txt",
        "sub/./../../canary.txt",
        "sub//..//..//canary.txt",
        "sub/deeper/../../../canary.txt",
        "missing/../../canary.txt",
        ".../canary.txt",
        "..../canary.txt",
        "....//canary.txt",
        "..;/canary.txt",
        ". ./canary.txt",
        "../\ncanary.txt",
        "~/canary.txt",
        "~root/.bashrc",
        "$HOME/canary.txt",
        "${PWD}/../canary.txt",
    ]


def _encoded() -> list[str]:
    return [
        "%2e%2e/canary.txt",
        "%2e%2e%2fcanary.txt",
        "..%2fcanary.txt",
        "%2E%2E/%2E%2E/canary.txt",
        "%252e%252e%252fcanary.txt",
        "..%c0%afcanary.txt",
        "%c0%ae%c0%ae/canary.txt",
        "..%5ccanary.txt",
        "..\\canary.txt",
        "..\\..\\canary.txt",
        "\uff0e\uff0e/canary.txt",
        "..\u2215canary.txt",
        "..\u2044canary.txt",
        "\u2025/canary.txt",
        "file:///etc/passwd",
        "inside.txt\x00../canary.txt",
        "../canary.txt\x00",
        "\x00",
    ]


def _absolute(root: Path, out: Path) -> list[str]:
    return [
        str(out / "canary.txt"),
        str(out / "elsewhere" / "canary.txt"),
        f"{root}-x/canary.txt",
        f"{root}/../canary.txt",
        f"{root}/sub/../../canary.txt",
        f"{root}/l_out_dir/canary.txt",
        f"{root}x/canary.txt",
        f"/{root}/../canary.txt",
        f"/proc/self/root{out}/canary.txt",
        "/proc/self/cwd/canary.txt",
        f"/../..{out}/canary.txt",
        "/etc/passwd",
        "/",
        "/..",
        str(out),
    ]


def _through_symlinks() -> list[str]:
    return [
        "l_out_file",
        "l_out_abs",
        "l_out_dir",
        "l_out_dir/canary.txt",
        "l_out_dir/deep/canary.txt",
        "l_out_dir/../canary.txt",
        "l_sibling/canary.txt",
        "l_parent",
        "l_parent/canary.txt",
        "l_parent/root/../canary.txt",
        "sub/upup",
        "sub/upup/canary.txt",
        "sub/up/../canary.txt",
        "sub/up/up/canary.txt",
        "l_in/upup/canary.txt",
        "l_in/../../canary.txt",
        "l_in_abs/../../canary.txt",
        "l_chain",
        "l_chain/canary.txt",
        "l_dangling_out",
        "loop_a",
        "loop_a/canary.txt",
        "self_loop/canary.txt",
        "dir_loop/../canary.txt",
        "dir_loop/dir_loop/../../canary.txt",
        "sub/deeper/l_back/canary.txt",
        "sub/deeper/l_back/elsewhere/canary.txt",
    ]
