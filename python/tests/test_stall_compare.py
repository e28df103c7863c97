"""tests/gpu/stall_compare.py on what one H200 run of tests/gpu/gpu_stalls.sh gave (the files
tests/data/cuda13.0_sm90/stall_*; their README says how they were made)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from script_module import load_script

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "cuda13.0_sm90"
SCRIPT = ROOT / "tests" / "gpu" / "stall_compare.py"
SOURCE = ROOT / "tests" / "gpu" / "stall_kernels.cu"

pytestmark = pytest.mark.skipif(not SCRIPT.exists(), reason="not in a warpscope source tree")


@pytest.fixture(scope="module")
def sc():
    return load_script(SCRIPT)


def marked_source(tmp_path: Path, moved: str | None = None) -> Path:
    """A stall_kernels.cu stand-in with each marker on the line the recorded run found hottest
    (`moved`'s one line lower), so the fixtures do not depend on later edits of the real file."""
    hottest = {}
    for row in json.loads((DATA / "stall_kernels_lines.json").read_text())["lines"]:
        name = row["kernel"].split("(")[0].removeprefix("ws_stall_")
        if row["file"] and name not in hottest.values():  # the first line of each: the hottest
            hottest[row["line"] + (1 if name == moved else 0)] = name
    text = [f"// ws-stall-line: {hottest[n]}" if n in hottest else "" for n in range(1, 201)]
    path = tmp_path / "stall_kernels.cu"
    path.write_text("\n".join(text) + "\n")
    return path


def check(sc, tmp_path, *extra, source=None, lines=True):
    args = ["check", "--ws", str(DATA / "stall_kernels_stalls.json"),
            "--ncu", str(DATA / "stall_kernels_ncu.csv"),
            "--source", str(source or marked_source(tmp_path))]
    if lines:
        args += ["--ws-lines", str(DATA / "stall_kernels_lines.json")]
    return sc.main(args + list(extra))


def test_ncu_shares_leave_not_issued_out(sc):
    ncu = sc.load_ncu(str(DATA / "stall_kernels_ncu.csv"))
    assert sorted(ncu) == ["ws_stall_bank_conflict", "ws_stall_barrier", "ws_stall_fma_saturated",
                           "ws_stall_long_scoreboard", "ws_stall_wait"]
    barrier = ncu["ws_stall_barrier"]
    assert barrier["launches"] == 1
    assert barrier["duration_ns"] == pytest.approx(34.67e6, rel=1e-3)  # the CSV says ms
    assert barrier["shares"]["barrier"] == pytest.approx(85.61, abs=0.01)
    assert sum(barrier["shares"].values()) == pytest.approx(100.0)
    assert not any(r.endswith("_not_issued") for e in ncu.values() for r in e["shares"])
    # Warp cycles per issued instruction: the sum of the ratios (selected is 1 per issue).
    assert ncu["ws_stall_wait"]["cpi"] == pytest.approx(3.84, abs=0.01)
    assert ncu["ws_stall_wait"]["shares"]["selected"] == pytest.approx(100 / 3.84, abs=0.05)


def test_recorded_run_passes_every_check(sc, tmp_path, capsys):
    assert check(sc, tmp_path) == 0
    out = capsys.readouterr().out
    assert "20 of 20 checks passed" in out
    assert "FAIL" not in out
    assert "barrier                    85.63     85.61    +0.02" in out
    assert "PASS  hottest line is the marked one: stall_kernels.cu:100 (95.2% of samples)" in out
    # The nvdisasm cross-check is not shown without --pcs/--sass.
    assert "info  hottest line" not in out


def test_without_line_view_the_line_check_fails(sc, tmp_path, capsys):
    assert check(sc, tmp_path, lines=False) == 5
    out = capsys.readouterr().out
    assert out.count('FAIL  hottest line is the marked one: not available') == 5
    assert "15 of 20 checks passed" in out


def test_other_hottest_line_fails(sc, tmp_path, capsys):
    assert check(sc, tmp_path, source=marked_source(tmp_path, moved="barrier")) == 1
    assert "FAIL  hottest line is the marked one: stall_kernels.cu:100" in capsys.readouterr().out


def test_tolerance(sc, tmp_path, capsys):
    # fma_saturated's largest difference is 0.71 points (selected), every other one below 0.2.
    assert check(sc, tmp_path, "--tolerance", "0.5") == 1
    assert "FAIL  top-3 shares within 0.5 points: largest |delta| 0.71 (selected)" in (
        capsys.readouterr().out)


def test_missing_kernel_fails_its_checks(sc, tmp_path, capsys):
    report = json.loads((DATA / "stall_kernels_stalls.json").read_text())
    for table in ("kernels", "reasons"):
        report[table] = [r for r in report[table] if not r["kernel"].startswith("ws_stall_wait(")]
    ws = tmp_path / "ws.json"
    ws.write_text(json.dumps(report))
    rc = sc.main(["check", "--ws", str(ws), "--ncu", str(DATA / "stall_kernels_ncu.csv"),
                  "--ws-lines", str(DATA / "stall_kernels_lines.json"),
                  "--source", str(marked_source(tmp_path))])
    assert rc == 3  # top state, designed state, shares; its line still comes from --ws-lines
    assert "warpscope: no samples for this kernel" in capsys.readouterr().out


def test_lines_from_pcs_and_nvdisasm(sc, tmp_path):
    sass = tmp_path / "k.sass"
    sass.write_text(
        ".text._Z16ws_stall_barrierPfii:\n"
        '\t//## File "/src/tests/gpu/stall_kernels.cu", line 98\n'
        "        /*0000*/                   LDC R1, c[0x0][0x28] ;\n"
        '\t//## File "/src/tests/gpu/stall_kernels.cu", line 100\n'
        "        /*0010*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;\n"
        "        /*0020*/                   IADD3 R4, R4, 0x1, RZ ;  /* 0x0000000104047810 */\n")
    pcs = tmp_path / "pcs.json"
    kernel = "ws_stall_barrier(float*, int, int)"
    # A row per PC and warp state: a PC's samples count once, whatever its states.
    pcs.write_text(json.dumps({"pcs": [
        {"kernel": kernel, "cubin_crc": 7, "pc_offset": 0x20, "pc_samples": 90, "reason": r}
        for r in ("barrier", "selected")] + [
        {"kernel": kernel, "cubin_crc": 7, "pc_offset": pc, "pc_samples": 5, "reason": "wait"}
        for pc in (0x0, 0x30)]}))
    lines = sc.lines_from_pcs(str(pcs), sc.load_sass_lines(str(sass)))
    hot = lines["ws_stall_barrier"]
    assert (hot[0]["file"], hot[0]["line"], hot[0]["pct"]) == (
        "/src/tests/gpu/stall_kernels.cu", 100, 90.0)
    assert {(x["line"], x["samples"]) for x in hot[1:]} == {(98, 5), (0, 5)}  # 0x30: no line


def test_source_marks_each_kernel_once(sc):
    text = SOURCE.read_text()
    markers = sc.load_markers(str(SOURCE))
    assert sorted(markers) == sorted(sc.DESIGNED)
    for name, line in markers.items():
        assert text.count(f"ws-stall-line: {name}") == 1
        assert "__global__" in "".join(text.splitlines(True)[max(0, line - 40):line])


def test_names_in_nsight_computes_spelling(sc):
    # warpscope's name (abi::__cxa_demangle) and the two spellings Nsight Compute used in the run.
    ws = ("void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 128, true, 1>(float, float, "
          "float, float, cudnnTensorStruct, float const*)")
    profiled = ("void cudnn::bn_bw_1C11_kernel_new<float, float, float2, (int)128, (bool)1, (int)1>"
                "(T2, T2, T2, T2, cudnnTensorStruct, const T1 *)")
    reported = "void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 128, 1, 1>(T2, T2, T2)"
    assert sc.kernel_key(ws) == sc.kernel_key(profiled)
    assert sc.loose_key(ws) == sc.loose_key(reported) != sc.loose_key(ws.replace("128", "512"))
    assert sc.loose_key("void at::native::(anonymous namespace)::max_pool_backward_nchw"
                        "<float, float, int>(float const*)") == sc.loose_key(
        "void at::<unnamed>::max_pool_backward_nchw<float, float, int>(const T1 *)")
    assert sc.base_name("void a::b::f<c::d<int> >(x::y)") == "f"


def test_ncu_filter_picks_function_names(sc, tmp_path, capsys):
    assert sc.main(["ncu-filter", "--ws", str(DATA / "stall_torch_stalls_top5.json")]) == 0
    assert capsys.readouterr().out.strip() == (
        "nchwToNhwcKernel|sm90_xmma_wgrad_indexed_implicit_gemm_f3|bn_bw_1C11_kernel_new"
        "|max_pool_backward_nchw")


def test_torch_report_side_by_side(sc, capsys):
    assert sc.main(["report", "--ws", str(DATA / "stall_torch_stalls_top5.json"),
                    "--ncu", str(DATA / "stall_torch_ncu.csv")]) == 0
    out = capsys.readouterr().out
    assert out.count("top state: same") == 5
    assert "no profiled launch" not in out
    assert "ncu: 11 launch(es) profiled" in out  # nchwToNhwcKernel: one per launch configuration
    assert "long_scoreboard            86.23     85.82    +0.41" in out  # bn_bw ... 128


def test_report_without_ncu(sc, capsys):
    assert sc.main(["report", "--ws", str(DATA / "stall_torch_stalls_top5.json"), "--top", "1"]) == 0
    out = capsys.readouterr().out
    assert "ncu: no profiled launch of this kernel" in out
    assert "long_scoreboard            50.28         -        -" in out
