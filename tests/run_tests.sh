#!/usr/bin/env bash
# Runs the test suite twice (OpenMP build, then the single-threaded build without OpenMP),
# its float-sensitive groups in the portable and the widest-ISA builds (tests/isa.sh), then
# the assignment tooling's self-test (tests/test_assignment.sh), the docs (tests/check_docs.sh,
# tests/doc_commands.sh: the README tour and chain-sum.md run as written), and ends with one line
# `N passed, N failed` summing all of them; exit status 1 on any failure.
set -u
cd "$(dirname "$0")/.."
FLOAT_GROUPS=model,objective,sampler,tree,treetask,treepack,mcprm,critic,probe
total_pass=0; total_fail=0; status=0
for run in tests/test_grpo tests/test_grpo_noomp "tests/test_grpo_portable $FLOAT_GROUPS" \
           "tests/test_grpo_wide $FLOAT_GROUPS" tests/test_assignment.sh tests/check_docs.sh tests/doc_commands.sh; do
  bin=${run%% *}
  args=${run#"$bin"}
  echo "== $run"
  out=$(mktemp)
  case $bin in *.sh) sh "$bin" ;; *) "./$bin" $args ;; esac 2>&1 | tee "$out"
  rc=${PIPESTATUS[0]}
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$out" | tail -1)
  rm -f "$out"
  if [ -z "$line" ]; then echo "$bin: crashed or printed no summary (exit $rc)"; total_fail=$((total_fail + 1)); status=1; continue; fi
  p=${line%% passed*}; f=${line#*, }; f=${f%% failed}
  total_pass=$((total_pass + p)); total_fail=$((total_fail + f))
  [ "$rc" -ne 0 ] && status=1
done
echo "$total_pass passed, $total_fail failed"
exit $status
