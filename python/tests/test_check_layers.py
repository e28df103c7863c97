"""tests/repo/check_layers.py: the real tree passes, and a tree with an include that runs back up,
an include of a header in no layer, or a cycle between folders of one layer fails, naming the
file and line."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from repo_check import REPO_CHECKS, run_check
from repo_check import write_tree as tree

ROOT = REPO_CHECKS.parents[1]
SCRIPT = REPO_CHECKS / "check_layers.py"

pytestmark = pytest.mark.skipif(not SCRIPT.exists(), reason="not in a warpscope source tree")


def run(root: Path) -> subprocess.CompletedProcess:
    return run_check(SCRIPT, root)


def test_the_source_tree_keeps_its_layers():
    r = run(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no include runs back up" in r.stdout


def test_a_tree_without_layers_fails(tmp_path):
    r = run(tree(tmp_path, {"src/x.cc": ""}))
    assert r.returncode == 1
    assert "no source file of any layer" in r.stdout


def test_downward_includes_pass(tmp_path):
    root = tree(tmp_path, {
        "proto/writer/w.h": "",
        "collectors/activity/a.h": '#include "proto/writer/w.h"\n',
        "analyzers/cli/main.cc": '#include "collectors/activity/a.h"\n#include <vector>\n',
    })
    assert run(root).returncode == 0


@pytest.mark.parametrize("files, message", [
    # An include that runs back up.
    ({"libinject/config.h": "",
      "collectors/activity/a.h": '// x\n#include "libinject/config.h"\n'},
     "collectors/activity/a.h:2: includes libinject/config.h of libinject"),
    # The same, named with angle brackets.
    ({"libinject/session.h": "",
      "collectors/pm_sampling/p.cc": '#include <vector>\n#include <libinject/session.h>\n'},
     "collectors/pm_sampling/p.cc:2: includes libinject/session.h of libinject"),
    # A header in no layer.
    ({"misc/x.h": "", "libinject/s.cc": '#include "misc/x.h"\n'},
     "which is in no layer"),
    # A cycle inside a layer.
    ({"collectors/a/a.h": '#include "collectors/b/b.h"\n',
      "collectors/b/b.h": '#include "collectors/a/a.h"\n'},
     "cycle: collectors/a -> collectors/b -> collectors/a"),
], ids=["runs_back_up", "angle_brackets", "no_layer", "cycle"])
def test_a_broken_tree_fails_naming_the_place(tmp_path, files, message):
    r = run(tree(tmp_path, files))
    assert r.returncode == 1
    assert message in r.stdout
