"""tests/repo/code_sizes.py --gate: a product tree within the limits passes; a file over 600
lines or a function over 80 in the product code fails, naming each; tests, benchmarks and
examples are not held to the limits."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from repo_check import REPO_CHECKS, run_check
from repo_check import write_tree as tree

SCRIPT = REPO_CHECKS / "code_sizes.py"

pytestmark = pytest.mark.skipif(not SCRIPT.exists(), reason="not in a warpscope source tree")


def gate(root: Path, *flags: str) -> subprocess.CompletedProcess:
    return run_check(SCRIPT, root, "--gate", *flags)


def cpp_function(name: str, body_lines: int) -> str:
    """A C++ function `name` of body_lines + 3 lines (line 3 on), in a namespace."""
    body = "".join(f"  x += {i};\n" for i in range(body_lines))
    return f"namespace w {{\n\nint {name}(int x) {{\n{body}  return x;\n}}\n\n}}  // namespace w\n"


def python_function(name: str, body_lines: int) -> str:
    body = "".join(f"    x += {i}\n" for i in range(body_lines))
    return f"def {name}(x):\n{body}    return x\n"


SMALL = {
    "libinject/session.cc": cpp_function("Start", 20),
    "analyzers/cli/main.cc": cpp_function("Main", 70),
    "python/warpscope/reader.py": python_function("read", 40),
    "scripts/tool.py": python_function("main", 10),
}


def test_a_product_tree_within_the_limits_passes(tmp_path):
    r = gate(tree(tmp_path, SMALL))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "4 product files, none over 600 lines" in r.stdout


def test_a_file_and_a_function_over_the_limits_fail_naming_each(tmp_path):
    files = dict(SMALL)
    files["analyzers/analyses/big.cc"] = "// filler\n" * 601
    files["libinject/config.cc"] = cpp_function("ApplySetting", 80)  # 83 lines
    files["python/warpscope/frames.py"] = python_function("build_frames", 81)
    r = gate(tree(tmp_path, files))
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    assert "analyzers/analyses/big.cc: 601 lines, over the limit of 600 for a file" in lines
    assert ("libinject/config.cc:3: 83 lines, over the limit of 80 for a function "
            "(int ApplySetting(int x))") in lines
    assert ("python/warpscope/frames.py:1: 83 lines, over the limit of 80 for a function "
            "(def build_frames)") in lines
    assert len(lines) == 3, r.stdout
    assert "3 over the limits in the product code" in r.stderr


def test_a_file_of_exactly_the_limits_passes(tmp_path):
    files = {"proto/writer/w.cc": "// filler\n" * 600,
             "collectors/a/a.cc": cpp_function("Translate", 77)}  # 80 lines
    assert gate(tree(tmp_path, files)).returncode == 0


def test_tests_benchmarks_and_examples_are_not_held_to_the_limits(tmp_path):
    files = dict(SMALL)
    files["tests/reader/reader_test.cc"] = "// filler\n" * 900
    files["bench/size/size_bench.py"] = python_function("main", 120)
    files["examples/demo.cu"] = cpp_function("main", 100)
    files["python/tests/test_x.py"] = python_function("test_x", 100)
    r = gate(tree(tmp_path, files))
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_limits_are_flags(tmp_path):
    r = gate(tree(tmp_path, SMALL), "--function-limit", "50")
    assert r.returncode == 1
    assert r.stdout.startswith("analyzers/cli/main.cc:3: 73 lines, over the limit of 50")
