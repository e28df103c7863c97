"""Makes the package importable from the source tree, so tests run without installing, with
the C++ extension of the build tree when it was built (cmake -DWARPSCOPE_PYTHON=ON):
$WARPSCOPE_BUILD_DIR/python, else build/python of the checkout."""

import os
import sys
from pathlib import Path

_SOURCE = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(_SOURCE / "python"))
_NATIVE = Path(os.environ.get("WARPSCOPE_BUILD_DIR", _SOURCE / "build")) / "python"
if _NATIVE.is_dir():
    sys.path.insert(1, str(_NATIVE))
