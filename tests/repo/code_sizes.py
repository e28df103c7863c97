#!/usr/bin/env python3
"""Sizes a reader can hold: the largest hand-written source files and the functions longer
than a limit, in C++ (.cc, .h, .c, .cu) and Python. With --gate, the house's limits on the
product code, checked by the tests (`ctest -R code_sizes`).

    tests/repo/code_sizes.py [--root DIR] [--file-limit 600] [--function-limit 80] [--top 10]
    tests/repo/code_sizes.py --gate [--root DIR] [--file-limit 600] [--function-limit 80]

Generated code (build trees) and test data are left out. C++ functions are found with a
brace scan of top-level definitions (namespaces do not count as a level; lambdas and class
bodies are part of the function or class that holds them), Python functions with `ast`.

Without --gate: a report on all the code (tests, benchmarks and examples too). Prints the
files over the file limit and the functions over the function limit, longest first, and a
summary line; exit status 0.

With --gate: the product code only (PRODUCT_DIRS: the recorder, the analyzers, the Python
package and the scripts; not tests/, bench/ or examples/). Prints every file over the file
limit and every function over the function limit, one line each with its place; exit status
1 when there is any, else 0.
"""
from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from pathlib import Path

CPP = {".cc", ".h", ".c", ".cu"}
SKIP_PARTS = {"build", "build-fuzz", ".gpu", "data", "golden", "__pycache__"}
OPENS_SCOPE = re.compile(r"^\s*(namespace|extern\s+\"C\")\b")
# The product code the gate holds to the limits.
PRODUCT_DIRS = ("libinject", "collectors", "analyzers", "proto", "python/warpscope", "scripts")
STRINGS = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'')


def tracked_files(root: Path) -> list[Path]:
    try:
        # Tracked files and new ones not yet added (but not those .gitignore leaves out).
        out = subprocess.run(["git", "-C", str(root), "ls-files", "--cached", "--others",
                              "--exclude-standard"], capture_output=True, text=True,
                             check=True).stdout.splitlines()
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


def is_product(rel: Path) -> bool:
    return any(rel.parts[:len(d.split("/"))] == tuple(d.split("/")) for d in PRODUCT_DIRS)


def measure(root: Path, product_only: bool) -> tuple[list, list]:
    """(lines, path) of each source file and (length, path:line, signature) of each function,
    longest first."""
    files, functions = [], []
    for path in tracked_files(root):
        rel = path.relative_to(root)
        if SKIP_PARTS & set(rel.parts) or not path.is_file():
            continue
        if path.suffix not in CPP and path.suffix != ".py":
            continue
        if product_only and not is_product(rel):
            continue
        text = path.read_text(errors="replace")
        files.append((text.count("\n"), str(rel)))
        found = cpp_functions(text) if path.suffix in CPP else python_functions(text)
        functions += [(length, f"{rel}:{line}", head[:70]) for line, length, head in found]
    files.sort(reverse=True)
    functions.sort(reverse=True)
    return files, functions


def gate(files: list, functions: list, file_limit: int, function_limit: int) -> int:
    """Prints each file and function of the product code over its limit; 1 when any is."""
    offenders = [f"{name}: {lines} lines, over the limit of {file_limit} for a file"
                 for lines, name in files if lines > file_limit]
    offenders += [f"{where}: {length} lines, over the limit of {function_limit} for a function "
                  f"({head.rstrip(' {')})" for length, where, head in functions
                  if length > function_limit]
    for line in offenders:
        print(line)
    if offenders:
        print(f"code_sizes: {len(offenders)} over the limits in the product code "
              f"({', '.join(PRODUCT_DIRS)}); split them by what they do (docs/architecture.md)",
              file=sys.stderr)
        return 1
    print(f"code_sizes: {len(files)} product files, none over {file_limit} lines; "
          f"{len(functions)} functions, none over {function_limit}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=str(Path(__file__).resolve().parents[2]))
    parser.add_argument("--file-limit", type=int, default=600)
    parser.add_argument("--function-limit", type=int, default=80)
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--gate", action="store_true",
                        help="check the product code only; exit status 1 when any is over")
    args = parser.parse_args()
    files, functions = measure(Path(args.root), product_only=args.gate)
    if args.gate:
        return gate(files, functions, args.file_limit, args.function_limit)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
