"""Makes the package importable from the source tree, so tests run without installing, with
the C++ extension of the build tree when it was built (cmake -DWARPSCOPE_PYTHON=ON):
$WARPSCOPE_BUILD_DIR/python, else build/python or build-nocuda/python (the analyzers-only
build, scripts/build_analyzers_only.sh) of the checkout."""

import os
import sys
from pathlib import Path

_SOURCE = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(_SOURCE / "python"))
for _build in ([os.environ["WARPSCOPE_BUILD_DIR"]] if "WARPSCOPE_BUILD_DIR" in os.environ
               else [_SOURCE / "build", _SOURCE / "build-nocuda"]):
    if any((Path(_build) / "python").glob("warpscope_native*")):
        sys.path.insert(1, str(Path(_build) / "python"))
        break
