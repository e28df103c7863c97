"""tests/gpu/distributed/check_job.py, which tests/gpu/distributed/gpu_distributed.sh runs on the GPU, on a
made-up job report with known answers: the lost time against the designed delay and against
the delay's measured cost."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "gpu" / "distributed" / "check_job.py"


def job_json(tmp_path: Path, lost_ms: float) -> Path:
    steps = [{"rank": 0, "step": s, "lost_ms": lost_ms} for s in range(3, 13)]
    steps += [{"rank": 1, "step": s, "lost_ms": 0.0} for s in range(3, 13)]
    job = {"scalars": {"straggler": 1, "verdict": "Straggler: rank 1 ...",
                       "cause": "Its host spends ... in NVTX range step_<N>/data_load ..."},
           "ranks": [{"rank": 0}, {"rank": 1}], "steps": steps, "instances": [],
           "collectives": [], "problems": []}
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    return path


def run(*args: str):
    r = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True)
    return r.returncode, r.stdout


def test_lost_time_against_the_designed_and_the_measured_delay(tmp_path):
    path = str(job_json(tmp_path, 17.0))
    # 17 ms a step lost: 13% over the 15 ms designed, within 10% of 16.5 ms measured.
    code, out = run("late_in", path, "--late-rank", "1", "--late-ms", "15",
                    "--measured-ms", "16.5", "--cause", "data_load")
    assert "PASS late_in/straggler" in out
    assert "PASS late_in/cause" in out
    assert "FAIL late_in/lost_rank0" in out
    assert "PASS late_in/lost_vs_measured_rank0" in out
    assert code == 1
    code, out = run("late_in", path, "--late-rank", "1", "--late-ms", "15",
                    "--measured-ms", "20")
    assert "FAIL late_in/lost_vs_measured_rank0" in out
    code, out = run("late_in", path, "--late-rank", "1", "--late-ms", "17")
    assert code == 0 and "lost_vs_measured" not in out
