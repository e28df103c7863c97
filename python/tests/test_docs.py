"""The example script in docs/python.md runs and prints what it promises."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import tracebuilder as tb

DOC = Path(__file__).resolve().parents[2] / "docs" / "python.md"


@pytest.mark.skipif(not DOC.exists(), reason="not in a warpscope source tree")
def test_example_script(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    script = next(b for b in blocks if "sys.argv[1]" in b)
    (tmp_path / "example.py").write_text(script)
    trace = tb.write(tmp_path / "t.wst", tb.every_kind())
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    result = subprocess.run([sys.executable, str(tmp_path / "example.py"), str(trace)],
                            env=env, capture_output=True, text=True, check=True)
    assert "gemm_kernel(float*)" in result.stdout
    assert "forward" in result.stdout and "my_domain" in result.stdout
    assert "warning" not in result.stdout
