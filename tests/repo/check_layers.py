#!/usr/bin/env python3
"""Checks that warpscope's source folders include only their own layer and the layers below.

    tests/repo/check_layers.py [--root DIR]

The layers, bottom first (docs/architecture.md says what each holds):

    proto/settings      header-only helpers every layer shares (the WARPSCOPE_* settings
                        table, setting values and errors, the rank and job variables)
    proto/control       the control channel's protocol (header-only, libc and std)
    proto/writer        the trace's wire format and the writer thread (no libprotobuf)
    collectors          one collector interface; the CUPTI collectors and their helpers
    libinject           entry points, session, settings, capture windows
    analyzers/render    tables, CSV, JSON, SVG primitives, output paths
    analyzers/model     reading a trace into a TraceModel
    analyzers/measures  the measures analyses share (PM attribution, occupancy calculator,
                        NVTX projection, steps, collectives, intervals, ...)
    analyzers/analyses  one file or folder per analysis (advise/, export/, job/)
    analyzers/launcher  the launcher behind `warpscope record`
    analyzers/cli       the command line

A file may include headers of its own layer and of the layers below it; tests/, bench/ and
examples/ may include any. Within a layer, the include graph between its folders
(collectors/activity, collectors/common, ...) must have no cycle. Exit status 1 with one line
per include that runs back up and per cycle; 0 and a one-line summary otherwise.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

LAYERS = [
    "proto/settings",
    "proto/control",
    "proto/writer",
    "collectors",
    "libinject",
    "analyzers/render",
    "analyzers/model",
    "analyzers/measures",
    "analyzers/analyses",
    "analyzers/launcher",
    "analyzers/cli",
]
CHECKED_EXTENSIONS = {".h", ".cc", ".c", ".cu"}
# "..." and <...> alike: a project header named with angle brackets is checked too.
INCLUDE = re.compile(r'^\s*#\s*include\s+(?:"([^"]+)"|<([^>]+)>)', re.MULTILINE)


def layer_of(path: str) -> int | None:
    """Index in LAYERS of the deepest layer folder holding `path`, or None."""
    best = None
    for i, layer in enumerate(LAYERS):
        if path == layer or path.startswith(layer + "/"):
            if best is None or len(LAYERS[best]) < len(layer):
                best = i
    return best


def folder_of(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else "."


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of `graph` as a list of nodes (first == last), or None."""
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=str(Path(__file__).resolve().parents[2]))
    args = parser.parse_args()
    root = Path(args.root)
    problems: list[str] = []
    graph: dict[str, set[str]] = {}
    files = 0
    for layer in LAYERS:
        for path in sorted((root / layer).rglob("*")):
            if path.suffix not in CHECKED_EXTENSIONS or not path.is_file():
                continue
            rel = path.relative_to(root).as_posix()
            own = layer_of(rel)
            if own is None or LAYERS[own] != layer:
                continue  # a deeper layer's file: checked under that layer
            files += 1
            text = path.read_text(errors="replace")
            for number, line in enumerate(text.splitlines(), 1):
                match = INCLUDE.match(line)
                if not match:
                    continue
                target = match.group(1) or match.group(2)
                if not (root / target).is_file():
                    continue  # a system, generated or third-party header
                theirs = layer_of(target)
                if theirs is None:
                    problems.append(f"{rel}:{number}: includes {target}, which is in no layer")
                elif theirs > own:
                    problems.append(
                        f"{rel}:{number}: includes {target} of {LAYERS[theirs]}, a layer above "
                        f"{LAYERS[own]}")
                elif theirs == own and folder_of(target) != folder_of(rel):
                    graph.setdefault(folder_of(rel), set()).add(folder_of(target))
    if files == 0:
        problems.append(f"no source file of any layer under {root}: is --root a warpscope tree?")
    cycle = find_cycle(graph)
    if cycle:
        problems.append("folders include each other in a cycle: " + " -> ".join(cycle))
    for problem in problems:
        print(problem)
    if problems:
        print(f"check_layers: {len(problems)} problem(s) in {files} files", file=sys.stderr)
        return 1
    print(f"check_layers: {files} files, {len(LAYERS)} layers, no include runs back up, no cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
