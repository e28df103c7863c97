"""``python -m warpscope info``."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import tracebuilder as tb
from warpscope import schema
from warpscope.__main__ import main

PACKAGE_DIR = Path(__file__).resolve().parents[1]


def test_info(tmp_path, capsys):
    path = tb.write(tmp_path / "t.wst", tb.every_kind())
    assert main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"format 1.{schema.FORMAT_MINOR}" in out and "rank 3" in out
    assert "device 0: NVIDIA H200 (sm_90, 132 SMs)" in out
    assert "kernel 1" in out and "complete (end: exit)" in out
    assert "notice [error] pm_sampling: insufficient privileges" in out


def test_info_reports_truncation_and_bad_files(tmp_path, capsys):
    data = tb.encode(tb.every_kind())
    (tmp_path / "cut.wst").write_bytes(data[:-2])
    (tmp_path / "junk.wst").write_bytes(b"junk")
    assert main(["info", str(tmp_path / "cut.wst"), str(tmp_path / "junk.wst")]) == 1
    captured = capsys.readouterr()
    assert "warning: the file was cut short" in captured.out
    assert "junk.wst: not a warpscope trace" in captured.err


def test_info_into_a_closed_pipe_ends_quietly(tmp_path):
    """`python -m warpscope info T... | head -3`: no BrokenPipeError traceback."""
    path = tb.write(tmp_path / "t.wst", tb.every_kind())
    files = " ".join([shlex.quote(str(path))] * 400)  # far more than a pipe buffer holds
    env = dict(os.environ, PYTHONPATH=str(PACKAGE_DIR))
    result = subprocess.run(f"{shlex.quote(sys.executable)} -m warpscope info {files} | head -3",
                            shell=True, capture_output=True, text=True, env=env, timeout=120,
                            executable="/bin/bash")
    assert len(result.stdout.splitlines()) == 3
    assert "Traceback" not in result.stderr and "BrokenPipe" not in result.stderr, result.stderr
