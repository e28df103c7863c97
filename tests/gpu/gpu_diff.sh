#!/usr/bin/env bash
# `warpscope diff` on the GPU: two runs of the same program must give no kernel verdict (the
# run-to-run noise), and a run whose kernel was made 20% longer must be the top regression
# (the top kernel row, and among the top two rows: the NVTX range around all the work costs
# the same) with an impact within 10% of what the change cost (launches x 10 us), and make
# --fail-on-regression exit with status 3.
#
#   tests/gpu/gpu_diff.sh        (WS_BUILD: a staged build, default .gpu; output in $OUT or WS_OUT)
#
# The program is ws_hostile (tests/gpu/hostile.cu): --kernels N kernels that spin for
# --kernel-us U microseconds each on the GPU timer, so their length is set, not measured.
# Then the efficiency rows, with PM samples: ws_pm_repro (tests/gpu_pm/pm_repro.cu) balanced
# twice must give no occupancy or tail verdict, and imbalanced (the same kernel and time per
# launch, the last 90% of it on 17 blocks) must make the kernel's tail row slower and
# --fail-on-regression exit with status 3.
set -u
source "$(dirname "$0")/gpu_build_env.sh" build gpu_diff_out
mkdir -p "$OUTDIR"
APP=$BIN/ws_hostile
W=$(mktemp -d /tmp/ws_diff.XXXXXX)
summary=$OUTDIR/diff_summary.txt
: >"$summary"
failures=0
n=2000
check() {  # name, condition (0 = pass), detail
  if [[ $2 == 0 ]]; then echo "PASS $1 $3" | tee -a "$summary"; else
    echo "FAIL $1 $3" | tee -a "$summary"; failures=$((failures + 1)); fi
}
for run in base same slower; do
  us=50; [[ $run == slower ]] && us=60
  "$WS" record -f -o "$W/$run.wst" -- "$APP" --kernels $n --kernel-us $us >"$OUTDIR/$run.log" 2>&1
  check "record_$run" $? "(--kernels $n --kernel-us $us)"
done
"$WS" diff "$W/base.wst" "$W/same.wst" >"$OUTDIR/diff_same.txt" 2>&1
"$WS" diff -f csv "$W/base.wst" "$W/same.wst" >"$OUTDIR/diff_same.csv" 2>&1
verdict=$(awk -F, '$1=="kernel" && $2 ~ /ws_hostile_spin/ {print $NF}' "$OUTDIR/diff_same.csv")
change=$(awk -F, '$1=="kernel" && $2 ~ /ws_hostile_spin/ {print $9}' "$OUTDIR/diff_same.csv")
[[ -z $verdict ]]; check same_run_no_kernel_verdict $? "(median change ${change}%)"
"$WS" diff "$W/base.wst" "$W/slower.wst" >"$OUTDIR/diff_slower.txt" 2>&1
"$WS" diff -f csv "$W/base.wst" "$W/slower.wst" >"$OUTDIR/diff_slower.csv" 2>&1
top_kernel=$(awk -F, 'NR>1 && $1=="kernel" {print $2; exit}' "$OUTDIR/diff_slower.csv")
top_two=$(awk -F, 'NR>1 && $1!="total" {print $2}' "$OUTDIR/diff_slower.csv" | head -2 | tr '\n' ' ')
[[ $top_kernel == *ws_hostile_spin* && $top_two == *ws_hostile_spin* ]]
check slower_kernel_is_top_row $? "(top kernel: $top_kernel; top two rows: $top_two)"
read -r change impact verdict < <(awk -F, '$1=="kernel" && $2 ~ /ws_hostile_spin/ {print $9, $10, $NF}' "$OUTDIR/diff_slower.csv")
expected=$((n * 10000))
detail=$(python3 - "$change" "$impact" "$expected" "$verdict" <<'PY'
import sys
change, impact, expected, verdict = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
ok = verdict == "slower" and abs(change - 20) <= 2 and abs(impact - expected) <= 0.1 * expected
print(f"change {change:+.2f}% (designed +20%), impact {impact/1e6:.2f} ms (designed {expected/1e6:.2f} ms), verdict {verdict}")
sys.exit(0 if ok else 1)
PY
)
check slower_change_and_impact $? "($detail)"
"$WS" diff --fail-on-regression "$W/base.wst" "$W/slower.wst" >/dev/null 2>&1
[[ $? == 3 ]]; check fail_on_regression_exits_3 $? ""
cat "$OUTDIR/diff_slower.txt" >>"$summary"
for run in balanced same_balanced imbalanced; do
  "$WS" record -f --pm-sampling --pm-interval 100us -o "$W/pm_$run.wst" -- \
      "$WS_BUILD/bin/ws_pm_repro" "${run#same_}" --launches 8 --json "$W/$run.json" \
      >"$OUTDIR/pm_$run.log" 2>&1
  check "record_pm_$run" $? ""
done
"$WS" diff -f csv "$W/pm_balanced.wst" "$W/pm_same_balanced.wst" >"$OUTDIR/diff_pm_same.csv" 2>&1
judged=$(awk -F, '($1=="occupancy" || $1=="tail") && $NF != "" {print $1}' "$OUTDIR/diff_pm_same.csv")
rows=$(awk -F, '$1=="occupancy" || $1=="tail"' "$OUTDIR/diff_pm_same.csv" | wc -l)
[[ -z $judged && $rows -ge 2 ]]; check pm_same_run_no_efficiency_verdict $? "($rows rows; judged: ${judged:-none})"
"$WS" diff "$W/pm_balanced.wst" "$W/pm_imbalanced.wst" >"$OUTDIR/diff_pm_tail.txt" 2>&1
"$WS" diff -f csv "$W/pm_balanced.wst" "$W/pm_imbalanced.wst" >"$OUTDIR/diff_pm_tail.csv" 2>&1
verdict=$(awk -F, '$1=="tail" && $2 ~ /ws_pm_spin/ {print $NF}' "$OUTDIR/diff_pm_tail.csv")
[[ $verdict == slower ]]; check pm_longer_tail_is_slower $? "(tail verdict: ${verdict:-none})"
"$WS" diff --fail-on-regression "$W/pm_balanced.wst" "$W/pm_imbalanced.wst" >/dev/null 2>&1
[[ $? == 3 ]]; check pm_fail_on_regression_exits_3 $? ""
cat "$OUTDIR/diff_pm_tail.txt" >>"$summary"
echo "gpu_diff: $failures failed" | tee -a "$summary"
rm -rf "$W"
exit $failures
