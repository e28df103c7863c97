#!/usr/bin/env python3
"""Holds docs/cli.md's help blocks to the CLI: under each `## NAME` heading where NAME is a
command `warpscope help` lists, the first fenced block is the output of `warpscope NAME --help`.

  cli_help_docs.py --cli build/bin/warpscope [--root .] --check   # exit 1 and a diff if stale
  cli_help_docs.py --cli build/bin/warpscope [--root .] --update  # rewrite the blocks

A section with no fenced block before its first subheading gets one right under the heading. A
section that names several commands (`## status, start, stop, dump`) is left as written."""
import argparse
import difflib
import re
import subprocess
import sys
from pathlib import Path

COMMAND_LINE = re.compile(r"^  ([a-z]+) {2,}\S")


def commands(cli):
    """The command names `warpscope help` lists."""
    out = subprocess.run([cli, "help"], capture_output=True, text=True, check=True).stdout
    return [m.group(1) for m in map(COMMAND_LINE.match, out.splitlines()) if m]


def help_text(cli, name):
    run = subprocess.run([cli, name, "--help"], capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"cli_help_docs: `warpscope {name} --help` exited {run.returncode}: "
                         f"{run.stderr.strip()}")
    return (run.stdout or run.stderr).rstrip("\n")


def rewrite(lines, name, text):
    """lines with the help block of section `## name` set to text; None when no such section."""
    try:
        head = lines.index(f"## {name}")
    except ValueError:
        return None
    end = next((i for i in range(head + 1, len(lines)) if lines[i].startswith("#")), len(lines))
    block = text.split("\n")
    fence = next((i for i in range(head + 1, end) if lines[i].startswith("```")), None)
    if fence is None:
        return lines[:head + 1] + ["", "```", *block, "```"] + lines[head + 1:]
    close = next(i for i in range(fence + 1, len(lines)) if lines[i].startswith("```"))
    return lines[:fence + 1] + block + lines[close:]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli", required=True)
    ap.add_argument("--root", default=str(Path(__file__).resolve().parents[2]))
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--update", action="store_true")
    args = ap.parse_args()
    doc = Path(args.root) / "docs" / "cli.md"
    before = doc.read_text().split("\n")
    lines = list(before)
    missing = []
    for name in commands(args.cli):
        changed = rewrite(lines, name, help_text(args.cli, name))
        if changed is None:
            if not any(s.startswith("## ") and name in re.split(r"[ ,]+", s) for s in lines):
                missing.append(name)
        else:
            lines = changed
    if missing:
        print(f"cli_help_docs: docs/cli.md has no section `## NAME` for {', '.join(missing)}",
              file=sys.stderr)
    if args.update:
        doc.write_text("\n".join(lines))
        return 1 if missing else 0
    if lines != before:
        sys.stdout.writelines(difflib.unified_diff(
            [s + "\n" for s in before], [s + "\n" for s in lines], "docs/cli.md",
            "warpscope NAME --help"))
        print("cli_help_docs: docs/cli.md's help blocks differ from the CLI; run "
              "tests/repo/cli_help_docs.py --cli build/bin/warpscope --update", file=sys.stderr)
        return 1
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
