"""Runs a check of the repository's own rules (tests/repo/*.py) on a tree, and writes small
trees for them to check."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO_CHECKS = Path(__file__).resolve().parents[2] / "tests" / "repo"


def run_check(script: Path, root: Path, *flags: str) -> subprocess.CompletedProcess:
    """`script --root ROOT FLAGS...`, its output captured; never raises on its exit status."""
    return subprocess.run([sys.executable, str(script), "--root", str(root), *flags],
                          capture_output=True, text=True, check=False)


def write_tree(tmp_path: Path, files: dict[str, str]) -> Path:
    """`tmp_path` holding each file named (a path relative to it) with its text."""
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path
