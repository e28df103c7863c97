#!/usr/bin/env python3
"""Redraws docs/images/timeline.svg from the bundled pipeline trace and fails when the
committed picture differs (so that it stays what the command draws) or is not well-formed
XML with one box per kernel of its window.

    check_docs_image.py WARPSCOPE_BINARY OUT.svg     (run from the source root)
"""
import subprocess
import sys
import xml.etree.ElementTree as ET

TRACE = "examples/traces/cuda13.0_sm90/pipeline_pm.wst"
IMAGE = "docs/images/timeline.svg"
COMMAND = ["timeline", TRACE, "--svg"]


def main() -> int:
    binary, out = sys.argv[1], sys.argv[2]
    run = subprocess.run([binary, *COMMAND, out], capture_output=True, text=True)
    if run.returncode != 0:
        print(run.stderr, file=sys.stderr)
        return 1
    drawn = open(out, "rb").read()
    root = ET.fromstring(drawn)  # raises on XML that is not well-formed
    ns = "{http://www.w3.org/2000/svg}"
    kernels = [r for r in root.iter(ns + "rect") if r.get("class") == "kernel"]
    # "wrote ... (RULE, N kernels)": the command's own count of kernels in the window.
    said = int(run.stderr.rsplit(", ", 1)[1].split(" ")[0])
    if len(kernels) != said or said == 0:
        print(f"{len(kernels)} kernel boxes drawn, the command counted {said}", file=sys.stderr)
        return 1
    if drawn != open(IMAGE, "rb").read():
        print(f"{IMAGE} differs from what `warpscope {' '.join(COMMAND)} {IMAGE}` draws now; "
              "run that command and commit the picture", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
