#!/usr/bin/env python3
"""Sizes a reader can hold: the largest hand-written source files and the functions longer
than a limit, in C++ (.cc, .h, .c, .cu) and Python.

    tests/repo/code_sizes.py [--root DIR] [--file-limit 600] [--function-limit 80] [--top 10]

Generated code (build trees) and test data are left out. C++ functions are found with a
brace scan of top-level definitions (namespaces do not count as a level; lambdas and class
bodies are part of the function or class that holds them), Python functions with `ast`.
Prints the files over the file limit and the functions over the function limit, longest
first, and a summary line; exit status 0 (a report, not a gate).
"""
from __future__ import annotations

import argparse
import ast
import re
import subprocess
from pathlib import Path

CPP = {".cc", ".h", ".c", ".cu"}
SKIP_PARTS = {"build", "build-fuzz", ".gpu", "data", "golden", "__pycache__"}
OPENS_SCOPE = re.compile(r"^\s*(namespace|extern\s+\"C\")\b")
STRINGS = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'')


def tracked_files(root: Path) -> list[Path]:
    try:
        out = subprocess.run(["git", "-C", str(root), "ls-files"], capture_output=True,
                             text=True, check=True).stdout.split()
        return [root / f for f in out]
    except (OSError, subprocess.CalledProcessError):
        return [p for p in root.rglob("*") if p.is_file()]


def cpp_functions(text: str) -> list[tuple[int, int, str]]:
    """(first line, length, signature) of each top-level function definition."""
    found = []
    depth = 0                 # braces open that are not namespaces
    scopes: list[bool] = []   # per open brace: True when it is a namespace
    start = None
    signature_line = None
    in_block_comment = False
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw
        if in_block_comment:
            if "*/" not in line:
                continue
            line = line.split("*/", 1)[1]
            in_block_comment = False
        line = STRINGS.sub('""', line.split("//", 1)[0])
        if "/*" in line:
            before, _, after = line.partition("/*")
            if "*/" in after:
                line = before + after.split("*/", 1)[1]
            else:
                line, in_block_comment = before, True
        if depth == 0 and raw[:1].strip() and not raw.startswith(("#", "}", "//")):
            signature_line = number
        for ch in line:
            if ch == "{":
                is_namespace = bool(OPENS_SCOPE.match(line)) and depth == 0
                scopes.append(is_namespace)
                if not is_namespace:
                    if depth == 0:
                        start = signature_line or number
                    depth += 1
            elif ch == "}" and scopes:
                if not scopes.pop():
                    depth -= 1
                    if depth == 0 and start is not None:
                        head = text.splitlines()[start - 1].strip()
                        if not re.match(r"(struct|class|enum|union)\b", head) and "(" in head + \
                                "".join(text.splitlines()[start:start + 3]):
                            found.append((start, number - start + 1, head))
                        start = None
    return found


def python_functions(text: str) -> list[tuple[int, int, str]]:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    return [(n.lineno, n.end_lineno - n.lineno + 1, f"def {n.name}")
            for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=str(Path(__file__).resolve().parents[2]))
    parser.add_argument("--file-limit", type=int, default=600)
    parser.add_argument("--function-limit", type=int, default=80)
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args()
    root = Path(args.root)
    files, functions = [], []
    for path in tracked_files(root):
        rel = path.relative_to(root)
        if SKIP_PARTS & set(rel.parts) or not path.is_file():
            continue
        if path.suffix not in CPP and path.suffix != ".py":
            continue
        text = path.read_text(errors="replace")
        files.append((text.count("\n"), str(rel)))
        found = cpp_functions(text) if path.suffix in CPP else python_functions(text)
        functions += [(length, f"{rel}:{line}", head[:70]) for line, length, head in found]
    files.sort(reverse=True)
    functions.sort(reverse=True)
    big_files = [f for f in files if f[0] > args.file_limit]
    long_functions = [f for f in functions if f[0] > args.function_limit]
    print(f"files over {args.file_limit} lines: {len(big_files)}")
    for lines, name in big_files[:args.top]:
        print(f"  {lines:6d}  {name}")
    print(f"functions over {args.function_limit} lines: {len(long_functions)}")
    for length, where, head in long_functions[:args.top]:
        print(f"  {length:6d}  {where}  {head}")
    print(f"summary: {len(files)} files, largest {files[0][0] if files else 0} lines; "
          f"{len(big_files)} over {args.file_limit}; {len(long_functions)} functions over "
          f"{args.function_limit} lines (longest {functions[0][0] if functions else 0})")


if __name__ == "__main__":
    main()
