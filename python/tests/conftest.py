"""Makes the package importable from the source tree, so tests run without installing."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
