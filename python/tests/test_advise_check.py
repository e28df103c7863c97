"""tests/gpu/advise/advise_check.py, which tests/gpu/advise/gpu_advise.sh runs on the GPU, on made-up advise
reports and run timings with known answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from script_module import load_script

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "gpu" / "advise" / "advise_check.py"

pytestmark = pytest.mark.skipif(not SCRIPT.exists(), reason="not in a warpscope source tree")


@pytest.fixture(scope="module")
def ac():
    return load_script(SCRIPT)


def advise(*findings):
    return {"scalars": {"gpu_busy_percent": 60.0},
            "findings": [{"rule": rule, "cost_ns": cost} for rule, cost in findings]}


def runs(problem_ns, fixed_ns, timed=50):
    out = [{"problem": "item", "fixed": False, "timed_steps": timed, "loop_ns": v}
           for v in problem_ns]
    out += [{"problem": "item", "fixed": True, "timed_steps": timed, "loop_ns": v}
            for v in fixed_ns]
    return out


def case(ac, name, report, log, plain_runs, tolerance):
    """check_case on one recording."""
    return ac.check_case(name, [(report, log)], plain_runs, tolerance)


LOG = 'warpscope: recording\n{"problem": "item", "fixed": false, "steps": 53, "timed_steps": 50}\n'


def test_cost_matching_the_saving_passes(ac):
    # 53 recorded steps of 160 us; the fix saves 8 ms over 50 timed steps = 160 us a step.
    r = case(ac, "item", advise(("blocking-read", 53 * 160_000), ("launch-bound", 10)), LOG,
                      runs([58e6, 58.1e6, 57.9e6, 58e6, 58.2e6], [50e6] * 5), 0.1)
    assert r["checks"] == {"top_finding": True, "cost_within_tolerance": True}
    assert r["cost_per_step_ns"] == pytest.approx(160_000)
    assert r["saving_per_step_ns"] == pytest.approx(160_000)
    assert r["relative_error"] == pytest.approx(0)


def test_cost_max_makes_a_range_the_saving_must_lie_in(ac):
    # The wait's finding says the fix saves up to 220 us a step should the host keep up;
    # the cost (160 us) is still compared with the saving, and the saving must lie in
    # 160 - 10% to 220 + 10%.
    report = advise(("blocking-read", 53 * 160_000))
    report["findings"][0]["cost_max_ns"] = 53 * 220_000
    r = case(ac, "item", report, LOG, runs([58e6] * 5, [50e6] * 5), 0.1)
    assert r["cost_max_per_step_ns"] == pytest.approx(220_000)
    assert r["checks"] == {"top_finding": True, "cost_within_tolerance": True,
                           "saving_within_range": True}
    assert "220.0" in ac.render([r])
    assert "PASS advise_item_saving_within_range (saved 160.0 us a step; reported 160.0 to " \
           "220.0 us)" in ac.render([r])
    # A saving of 200 us a step: 25% above the cost, inside the range.
    r = case(ac, "item", report, LOG, runs([60e6] * 5, [50e6] * 5), 0.1)
    assert r["checks"] == {"top_finding": True, "cost_within_tolerance": False,
                           "saving_within_range": True}
    # 260 us a step lies above 220 + 10%; 120 us below 160 - 10%.
    for problem_ns in (63e6, 56e6):
        r = case(ac, "item", report, LOG, runs([problem_ns] * 5, [50e6] * 5), 0.1)
        assert r["checks"] == {"top_finding": True, "cost_within_tolerance": False,
                               "saving_within_range": False}
    # cost_max within the tolerance of the cost: no range, no second check.
    report["findings"][0]["cost_max_ns"] = 53 * 170_000
    r = case(ac, "item", report, LOG, runs([58e6] * 5, [50e6] * 5), 0.1)
    assert "saving_within_range" not in r["checks"]
    # Reports written before cost_max_ns existed: the cost is the most.
    r = case(ac, "item", advise(("blocking-read", 53 * 160_000)), LOG,
             runs([58e6] * 5, [50e6] * 5), 0.1)
    assert r["cost_max_per_step_ns"] == pytest.approx(160_000)


def test_recording_overhead_per_timed_step(ac):
    log = ('{"problem": "item", "fixed": false, "steps": 53, "timed_steps": 50, '
           '"loop_ns": 59000000}\n')
    r = case(ac, "item", advise(("blocking-read", 53 * 160_000)), log,
                      runs([58e6] * 5, [50e6] * 5), 0.1)
    assert r["record_overhead_per_step_ns"] == pytest.approx(20_000)
    other = case(ac, "item", advise(("blocking-read", 53 * 160_000)), log.replace(
        '"timed_steps": 50', '"timed_steps": 40'), runs([58e6] * 5, [50e6] * 5), 0.1)
    assert "record_overhead_per_step_ns" not in other
    assert "record_overhead_per_step_ns" not in case(ac, 
        "item", advise(("blocking-read", 53 * 160_000)), LOG, runs([58e6] * 5, [50e6] * 5), 0.1)


def test_saving_as_the_recording_sees_it(ac):
    # Recorded: the problem's loop 59 ms, the fix's 52 ms and 53 ms over 50 steps: the
    # recording sees a saving of 130 us a step (median fix 52.5 ms), the plain runs 160 us.
    log = ('{"problem": "item", "fixed": false, "steps": 53, "timed_steps": 50, '
           '"loop_ns": 59000000}\n')
    fixed = [{"problem": "item", "fixed": True, "timed_steps": 50, "loop_ns": v}
             for v in (52e6, 53e6)]
    fixed.append({"problem": "item", "fixed": True, "timed_steps": 40, "loop_ns": 1})
    r = ac.check_case("item", [(advise(("blocking-read", 53 * 130_000)), log)],
                      runs([58e6] * 5, [50e6] * 5), 0.1, fixed)
    assert r["recorded_fixed_runs"] == 2  # the run of another length is left out
    assert r["recorded_saving_per_step_ns"] == pytest.approx(130_000)
    assert r["recorded_error"] == pytest.approx(0)
    assert r["relative_error"] == pytest.approx(130 / 160 - 1)
    assert r["checks"]["cost_within_tolerance"] is False  # judged on the plain runs only
    assert "+0.0%" in ac.render([r]).splitlines()[1]
    assert "recorded_error" not in ac.check_case(
        "item", [(advise(("blocking-read", 53 * 130_000)), log)], runs([58e6] * 5, [50e6] * 5),
        0.1)


def test_one_off_per_step_and_the_overhead_it_covers(ac):
    findings = advise(("blocking-read", 53 * 160_000), ("one-off", 53 * 100_000))
    findings["findings"][1]["evidence"] = (
        "1 gap, longest 5.46 ms, ...; overhead records (WARPSCOPE_FLUSH) cover 4.90 ms of these "
        "gaps: the recording's own time")
    r = case(ac, "item", findings, LOG, runs([58e6] * 5, [50e6] * 5), 0.1)
    assert r["checks"] == {"top_finding": True, "cost_within_tolerance": True}
    assert r["one_off_per_step_ns"] == pytest.approx(100_000)
    assert r["one_off_overhead_covered_ns"] == pytest.approx(4.9e6)
    assert "one-off/step us" in ac.render([r])
    plain = case(ac, "item", advise(("blocking-read", 53 * 160_000)), LOG,
                          runs([58e6] * 5, [50e6] * 5), 0.1)
    assert plain["one_off_per_step_ns"] == 0
    assert plain["one_off_overhead_covered_ns"] is None


def test_cost_off_by_more_than_the_tolerance_fails(ac):
    r = case(ac, "item", advise(("blocking-read", 53 * 200_000)), LOG,
                      runs([58e6] * 5, [50e6] * 5), 0.1)
    assert r["checks"]["top_finding"]
    assert not r["checks"]["cost_within_tolerance"]
    assert r["relative_error"] == pytest.approx(0.25)


def test_wrong_top_finding_fails_but_cost_is_still_judged(ac):
    r = case(ac, "item", advise(("launch-bound", 10**9), ("blocking-read", 53 * 160_000)),
                      LOG, runs([58e6] * 5, [50e6] * 5), 0.1)
    assert r["top_rule"] == "launch-bound"
    assert r["checks"] == {"top_finding": False, "cost_within_tolerance": True}


def test_medians_ignore_one_slow_run(ac):
    r = case(ac, "item", advise(("blocking-read", 53 * 160_000)), LOG,
                      runs([58e6, 58e6, 90e6, 58e6, 58e6], [50e6, 50e6, 50e6, 70e6, 50e6]), 0.1)
    assert r["median_problem_ns"] == 58e6 and r["median_fixed_ns"] == 50e6
    assert r["checks"]["cost_within_tolerance"]


def test_several_recordings_median_cost_and_every_top_must_match(ac):
    # Recordings of a program whose copies vary run to run: 140, 160 and 210 us a step.
    recs = [(advise(("pageable-copy", 53 * c)), LOG) for c in (140_000, 210_000, 160_000)]
    r = ac.check_case("pageable", recs, runs([58e6] * 5, [50e6] * 5), 0.1)
    assert r["recordings"] == 3
    assert r["cost_per_step_ns"] == pytest.approx(160_000)
    assert r["cost_spread"] == pytest.approx(70_000 / 160_000)
    assert r["checks"] == {"top_finding": True, "cost_within_tolerance": True}
    assert "cost spread" in ac.render([r])
    # One recording with another top finding fails the top check, and says which.
    recs[1] = (advise(("launch-bound", 10**9), ("pageable-copy", 53 * 160_000)), LOG)
    r = ac.check_case("pageable", recs, runs([58e6] * 5, [50e6] * 5), 0.1)
    assert r["top_rules"] == ["pageable-copy", "launch-bound", "pageable-copy"]
    assert r["top_rule"] == "pageable-copy"
    assert not r["checks"]["top_finding"]
    assert "launch-bound" in ac.render([r])
    # A recording without the expected finding leaves no cost to judge.
    recs[1] = (advise(("launch-bound", 10**9)), LOG)
    r = ac.check_case("pageable", recs, runs([58e6] * 5, [50e6] * 5), 0.1)
    assert r["problem"] == "no finding of the expected rule"
    assert not r["checks"]["cost_within_tolerance"]


def test_recording_overhead_is_the_median_recorded_loop(ac):
    logs = [LOG.replace('"timed_steps": 50}', f'"timed_steps": 50, "loop_ns": {t}}}')
            for t in (59e6, 70e6, 58.5e6)]
    recs = [(advise(("blocking-read", 53 * 160_000)), log) for log in logs]
    r = ac.check_case("item", recs, runs([58e6] * 5, [50e6] * 5), 0.1)
    assert r["record_overhead_per_step_ns"] == pytest.approx(20_000)


def test_missing_pieces_fail_with_a_reason(ac):
    r = case(ac, "item", advise(), LOG, runs([1], [1]), 0.1)
    assert r["checks"] == {"top_finding": False, "cost_within_tolerance": False}
    assert r["problem"] == "no finding of the expected rule"
    r = case(ac, "item", advise(("blocking-read", 5)), "no line here", runs([1], [1]), 0.1)
    assert r["problem"] == "no program line in the record log"


def test_main_reads_files_and_counts_failures(ac, tmp_path, capsys):
    (tmp_path / "a.json").write_text(json.dumps(advise(("host-range", 53 * 500_000))))
    (tmp_path / "rec.log").write_text(LOG.replace("item", "loader"))
    (tmp_path / "runs.jsonl").write_text(
        "\n".join(json.dumps(r) for r in runs([75e6] * 5, [50e6] * 5)) + "\nnot json\n")
    out = tmp_path / "check.json"
    spec = f"loader:{tmp_path}/a.json:{tmp_path}/rec.log:{tmp_path}/runs.jsonl"
    assert ac.main(["--case", spec, "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "PASS advise_loader_top_finding" in text and "PASS advise_loader_cost" in text
    assert json.loads(out.read_text())[0]["saving_per_step_ns"] == pytest.approx(500_000)
    # The same figures judged as another program: the top finding is the wrong rule.
    assert ac.main(["--case", spec.replace("loader:", "serial:", 1)]) == 2
    # Two recordings: comma-separated reports and logs, in the same order.
    (tmp_path / "b.json").write_text(json.dumps(advise(("host-range", 53 * 520_000))))
    two = f"loader:{tmp_path}/a.json,{tmp_path}/b.json:{tmp_path}/rec.log,{tmp_path}/rec.log:" \
          f"{tmp_path}/runs.jsonl"
    assert ac.main(["--case", two, "--json", str(out)]) == 0
    assert json.loads(out.read_text())[0]["recordings"] == 2
    with pytest.raises(SystemExit):
        ac.main(["--case", two.replace(f",{tmp_path}/rec.log", "", 1)])
    # A fifth part: recorded runs of the fix (none of the recorded loop's length here).
    (tmp_path / "fixed.jsonl").write_text(json.dumps(
        {"problem": "loader", "fixed": True, "timed_steps": 50, "loop_ns": 60e6}) + "\n")
    assert ac.main(["--case", f"{spec}:{tmp_path}/fixed.jsonl", "--json", str(out)]) == 0
    assert "recorded_error" not in json.loads(out.read_text())[0]


def test_a_finding_is_divided_by_the_steady_steps_advise_found(ac):
    """With NVTX steps, a finding covers the steady steps (advise's steps less its warm-up);
    without, every recorded step. A held-out case NAME@RANGES expects NAME's rule."""
    log = json.dumps({"problem": "h_item@numbered", "fixed": False, "steps": 33,
                      "timed_steps": 30, "loop_ns": 1})
    report = advise(("blocking-read", 30_000_000))
    with_steps = dict(report, steps=33, warmup_steps=3)
    r = case(ac, "h_item@numbered", with_steps, log, runs([100e6] * 5, [70e6] * 5, timed=30), 0.1)
    assert r["expected_rule"] == "blocking-read"
    assert r["cost_per_step_ns"] == pytest.approx(1e6)  # 30 ms over 30 steady steps
    assert r["checks"]["cost_within_tolerance"]
    without = case(ac, "h_item@none", report, log, runs([100e6] * 5, [70e6] * 5, timed=30), 0.1)
    assert without["cost_per_step_ns"] == pytest.approx(30e6 / 33)
    assert ac.expected_rule("c_tinyloop") == "launch-bound"
    assert ac.expected_rule("nothing@numbered") is None
