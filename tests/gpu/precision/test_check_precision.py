"""tests/gpu/precision/check_precision.py, which check_precision.sh runs on the GPU, on made-up
advise reports and run lines with known answers (no GPU: ctest precision_check_test)."""

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().with_name("check_precision.py")
PHASES = ["xf_forward", "xf_backward"]


@pytest.fixture(scope="module")
def cp():
    spec = importlib.util.spec_from_file_location("check_precision", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ERRORS = {"fp32": 2e-7, "tf32": 3e-4, "bf16": 2e-7}  # the probe's, as FP32 and TF32 give


def run_lines(fp32=60.0, tf32=20.0, bf16=12.0, n=5, phases=PHASES, errors=ERRORS):
    lines = []
    for i in range(n):
        for precision, ms in (("fp32", fp32), ("tf32", tf32), ("bf16", bf16)):
            probe = {"matmul_error": errors[precision], "conv_error": errors[precision]}
            lines.append({"program": "transformer", "precision": precision,
                          "step_ms_median": ms + 0.1 * (i - 2), "gemm_phases": phases,
                          "probe": probe})
    return lines


def finding(rule="fp32-matrix-precision", per_step_ns=40e6, path="xf_step_<N>/xf_forward"):
    return {"rule": rule, "cost_ns": per_step_ns * 20, "cost_per_step_ns": per_step_ns,
            "nvtx_path": path, "title": "FP32 GEMMs on SIMT", "one_time": False}


def report(*findings, steps=20):
    return {"steps": steps, "steady_steps": steps - 5, "findings": list(findings)}


def write(tmp_path, name, content):
    path = tmp_path / name
    if isinstance(content, list):
        path.write_text("\n".join(json.dumps(x) for x in content) + "\nnot json\n")
    else:
        path.write_text(json.dumps(content))
    return str(path)


def case(cp, tmp_path, runs, fp32, bf16, **kw):
    return cp.check_case("transformer", write(tmp_path, "runs.jsonl", runs),
                         write(tmp_path, "fp32.json", fp32), write(tmp_path, "bf16.json", bf16),
                         **kw)


OTHER = {"rule": "launch-bound", "cost_ns": 5e6, "cost_per_step_ns": 2e5, "nvtx_path": "x"}
GOOD_FP32 = report(finding(per_step_ns=22e6), finding(per_step_ns=20e6,
                   path="xf_step_<N>/xf_backward"), OTHER)


def test_matching_prediction_passes(cp, tmp_path):
    # Measured: 60 - 20 = 40 ms a step; predicted 22 + 20 = 42 ms over the two phases' findings.
    r = case(cp, tmp_path, run_lines(), GOOD_FP32, report(OTHER))
    assert r["checks"] == {"runs": True, "modes": True, "finding": True, "saving": True,
                           "phases": True, "bf16_clean": True}
    assert r["pass"]
    assert r["measured_saving_ns"] == pytest.approx(40e6)
    assert r["predicted_saving_ns"] == pytest.approx(42e6)
    assert r["ratio"] == pytest.approx(1.05)
    assert r["step_ms"] == {"fp32": pytest.approx(60), "tf32": pytest.approx(20),
                            "bf16": pytest.approx(12)}
    text = cp.render([r], 0.25)
    assert "PASS precision_transformer_saving (predicted 42.000 ms a step, measured 40.000" in text
    assert '"rule": "fp32-matrix-precision"' in text  # the findings whole


def test_one_time_findings_are_listed_not_counted(cp, tmp_path):
    startup = {**finding(), "cost_ns": 900e6, "cost_per_step_ns": None, "one_time": True}
    fp32 = {**GOOD_FP32, "findings": GOOD_FP32["findings"] + [startup]}
    r = case(cp, tmp_path, run_lines(), fp32, report())
    assert len(r["findings"]) == 3 and r["predicted_saving_ns"] == pytest.approx(42e6)
    assert r["predicted_by_finding"][2] == {"ns": None, "from": "one-time finding, not counted"}


def test_prediction_off_by_more_than_the_tolerance_fails(cp, tmp_path):
    # Against 40 ms measured: 2 x 15 ms (ratio 0.75) lies on the 25% edge and passes;
    # 2 x 14 ms (0.70) and 2 x 26 ms (1.30) fail.
    for per_finding, ok in ((15e6, True), (14e6, False), (26e6, False)):
        fp32 = report(finding(per_step_ns=per_finding),
                      finding(per_step_ns=per_finding, path="xf_step_<N>/xf_backward"))
        r = case(cp, tmp_path, run_lines(), fp32, report())
        assert r["checks"]["saving"] is ok, per_finding
        assert r["checks"]["finding"] and r["checks"]["phases"]
    assert "FAIL precision_transformer_saving" in cp.render([r], 0.25)


def test_missing_phase_fails_and_is_named(cp, tmp_path):
    fp32 = report(finding(per_step_ns=40e6))  # only xf_forward
    r = case(cp, tmp_path, run_lines(), fp32, report())
    assert r["checks"]["phases"] is False
    assert r["phases_missing"] == ["xf_backward"]
    assert "missing xf_backward" in cp.render([r], 0.25)


def test_no_precision_finding_lists_every_rule(cp, tmp_path):
    r = case(cp, tmp_path, run_lines(), report(OTHER, {"rule": "stalls", "cost_ns": 1}),
             report())
    assert r["checks"] == {"runs": True, "modes": True, "finding": False, "saving": False,
                           "phases": False, "bf16_clean": True}
    assert "rules: launch-bound, stalls" in cp.render([r], 0.25)


def test_bf16_run_with_a_finding_fails(cp, tmp_path):
    r = case(cp, tmp_path, run_lines(), GOOD_FP32, report(finding(rule="tf32-candidate")))
    assert r["checks"]["bf16_clean"] is False
    assert r["checks"]["saving"] and r["checks"]["phases"]
    assert "FAIL precision_transformer_bf16_clean (1 precision finding(s)" in cp.render([r], 0.25)


def test_unreadable_reports_fail_with_a_note(cp, tmp_path):
    r = cp.check_case("transformer", write(tmp_path, "runs.jsonl", run_lines()),
                      str(tmp_path / "absent.json"), str(tmp_path / "absent2.json"))
    assert not r["pass"] and r["checks"]["bf16_clean"] is False
    assert any("fp32 advise unreadable" in n for n in r["notes"])
    text = cp.render([r], 0.25)
    assert "FAIL precision_transformer_bf16_clean (the bf16 run's advise is unreadable" in text
    assert "ratio -, tolerance 25%; from no finding)" in text
    r = cp.check_case("transformer", str(tmp_path / "no_runs.jsonl"),
                      write(tmp_path, "fp32.json", GOOD_FP32), write(tmp_path, "bf16.json", report()))
    assert r["checks"]["runs"] is False and r["measured_saving_ns"] is None
    assert r["checks"]["saving"] is False and r["checks"]["finding"] is True
    assert any("runs unreadable" in n for n in r["notes"])


def test_too_few_runs_fail(cp, tmp_path):
    runs = [x for x in run_lines() if not (x["precision"] == "tf32" and x["step_ms_median"] > 20)]
    r = case(cp, tmp_path, runs, GOOD_FP32, report())
    assert r["runs"]["tf32"] == 3 and r["checks"]["runs"] is False


def test_flags_without_effect_fail_the_modes_check(cp, tmp_path):
    # TF32 asked for but the matmul ran FP32: no saving to compare with, the check says why.
    r = case(cp, tmp_path, run_lines(tf32=59.0, errors={**ERRORS, "tf32": 2e-7}), GOOD_FP32,
             report())
    assert r["checks"]["modes"] is False and r["checks"]["saving"] is False
    assert "tf32 runs 2.0e-07 to 2.0e-07 (FP32 under 1e-05, TF32 above)" in cp.render([r], 0.25)
    # Runs without a probe cannot show their math.
    runs = run_lines()
    for run in runs:
        run.pop("probe")
    r = case(cp, tmp_path, runs, GOOD_FP32, report())
    assert r["checks"]["modes"] is False and r["checks"]["saving"] is True


def test_recorded_runs_are_shown_not_counted(cp, tmp_path):
    runs = run_lines() + [{"recorded": True, "precision": "fp32", "step_ms_median": 99.0,
                           "gemm_phases": PHASES}]
    r = case(cp, tmp_path, runs, GOOD_FP32, report())
    assert r["step_ms"]["fp32"] == pytest.approx(60) and r["runs"]["fp32"] == 5
    assert r["recorded_step_ms"] == {"fp32": 99.0}


def test_saving_fields_found_by_name(cp):
    # A tf32 figure wins over the cost; a whole-run figure is divided by the report's steps;
    # nested objects are searched; nothing usable says so.
    assert cp.predicted_per_step({"cost_per_step_ns": 1, "tf32_saving_per_step_ns": 7}, 20) == \
        (7.0, "tf32_saving_per_step_ns")
    assert cp.predicted_per_step({"expected_saving_ns": 400}, 20) == \
        (20.0, "expected_saving_ns / 20 steps")
    assert cp.predicted_per_step({"saving": {"tf32_ns": 100, "bf16_ns": 300}}, 10) == \
        (10.0, "saving.tf32_ns / 10 steps")
    assert cp.predicted_per_step({"cost_per_step_ns": None, "cost_ns": 50}, 5) == \
        (10.0, "cost_ns / 5 steps")
    assert cp.predicted_per_step({"title": "x"}, 5) == (None, "no saving figure")
    assert cp.predicted_per_step({"cost_ns": 50}, None)[0] is None
    assert cp.predicted_per_step({"a": {"b": 3}}, 5, field="a.b") == (3.0, "a.b")
    assert cp.predicted_per_step({"a": 30}, 5, total_field="a") == (6.0, "a / 5 steps")


def test_kind_matching(cp):
    found = cp.precision_findings({"findings": [
        {"rule": "launch-bound"}, {"kind": "Precision"}, {"category": "tf32"},
        {"rule": "x", "type": "fp32-precision"}]})
    assert [cp.finding_kind(f) for f in found] == ["Precision", "tf32", "x fp32-precision"]


def test_main_writes_the_summary_and_counts_failures(cp, tmp_path):
    runs = write(tmp_path, "runs.jsonl", run_lines())
    good = write(tmp_path, "good.json", GOOD_FP32)
    clean = write(tmp_path, "clean.json", report(OTHER))
    out = tmp_path / "result.json"
    assert cp.main(["--case", f"transformer:{runs}:{good}:{clean}", "--json", str(out)]) == 0
    summary = json.loads(out.read_text())
    assert summary["pass"] and summary["cases"][0]["ratio"] == pytest.approx(1.05)
    # The bf16 report given as the fp32 one: no finding, so no saving and no phases either.
    assert cp.main(["--case", f"transformer:{runs}:{clean}:{clean}:{good}",
                    "--json", str(out)]) == 3
    summary = json.loads(out.read_text())
    assert not summary["pass"] and summary["failed_checks"] == 3
    assert len(summary["cases"][0]["tf32_findings"]) == 2
    # --combine max takes the larger finding (22 ms against 40): out of tolerance.
    assert cp.main(["--case", f"transformer:{runs}:{good}:{clean}", "--combine", "max"]) == 1
    with pytest.raises(SystemExit):
        cp.main(["--case", "transformer:only-two"])
