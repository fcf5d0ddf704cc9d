#!/usr/bin/env bash
# tests/run_tests.sh [BUILD]: make test's report. Runs the test suite twice (OpenMP build, then
# the single-threaded build without OpenMP), its float-sensitive groups in the portable and the
# widest-ISA builds (tests/isa.sh), the CUDA kernel test where nvcc built it (without a GPU it
# runs nothing), the assignment tooling's self-test (tests/test_assignment.sh) and the docs
# (tests/check_docs.sh, tests/doc_commands.sh: the README tour and chain-sum.md run as written).
# BUILD (make test's): BUILD.rc, the exit status of the builds, and BUILD.log, their output,
# reported as the first check. Prints only PASS and FAIL lines, each failure's details under its
# FAIL line (what the run printed since the check before it and until the next), and last one
# line `N passed, N failed` summing all of them; exit status 1 on any failure. What a run prints
# around a passing check (the notes and hints of the ./grpo commands the tests run, the runs'
# own summaries) is not shown: run a binary alone to see it.
set -u
cd "$(dirname "$0")/.."
FLOAT_GROUPS=model,objective,sampler,tree,treetask,treepack,mcprm,critic,probe
total_pass=0; total_fail=0; status=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/grpo_run_tests.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
fail() { echo "FAIL  $1"; total_fail=$((total_fail + 1)); status=1; }
indent() { awk 'NF { print (/^[ \t]/ ? "" : "    ") $0 }'; }

if [ $# -ge 1 ]; then   # the builds
  rc=$(cat "$1.rc" 2> /dev/null || echo "unknown")
  if [ "$rc" = 0 ]; then
    nw=$(grep -c 'warning:' "$1.log")
    echo "PASS  build: grpo and the suite's builds                            $nw compiler warnings$(
      [ "$nw" = 0 ] || echo " (in $1.log)")"
    total_pass=$((total_pass + 1))
  else
    fail "build: grpo and the suite's builds (exit $rc); the last lines of $1.log:"
    tail -n 30 "$1.log" 2> /dev/null | indent
    echo "$total_pass passed, $total_fail failed"
    exit 1
  fi
fi

# filter WHERE REST: a run's output on stdin; prints its PASS lines, and its FAIL lines with what
# the run printed since the check before (the detail lines of compare(), a command's stderr) and
# until the next check under them. Writes to REST its summary line, the number of FAIL lines, and
# what it printed after its last check (the reason when it crashed).
filter() {
  awk -v where="$1" -v rest="$2" '
    function detail(s) { if (s ~ /[^ \t]/) print (s ~ /^[ \t]/ ? "" : "    ") s }
    /^[0-9]+ passed, [0-9]+ failed$/ { summary = $0; next }
    /^PASS  / { print; fflush(); np = 0; after = 0; next }
    /^FAIL  / { print; nfail++; detail("    (" where ")")
                for (i = 1; i <= np; i++) detail(pend[i])
                fflush(); np = 0; after = 1; next }
    after { detail($0); fflush(); next }
    { if (np == 40) { for (i = 1; i < np; i++) pend[i] = pend[i + 1]; np-- }   # the last 40
      pend[++np] = $0 }
    END { print summary > rest; print nfail + 0 > rest; for (i = 1; i <= np; i++) print pend[i] > rest }'
}

runs=(tests/test_grpo tests/test_grpo_noomp "tests/test_grpo_portable $FLOAT_GROUPS" "tests/test_grpo_wide $FLOAT_GROUPS")
[ -x tests/test_cuda ] && command -v "${NVCC:-nvcc}" > /dev/null 2>&1 && runs+=("tests/test_cuda --quick")
runs+=(tests/test_assignment.sh tests/check_docs.sh tests/doc_commands.sh)
for run in "${runs[@]}"; do
  bin=${run%% *}
  args=${run#"$bin"}
  case $bin in *.sh) sh "$bin" ;; *) "./$bin" $args ;; esac 2>&1 < /dev/null | filter "$run" "$tmp/rest"
  rc=${PIPESTATUS[0]}
  line=$(sed -n 1p "$tmp/rest"); nfail=$(sed -n 2p "$tmp/rest")
  if [ "$bin" = tests/test_cuda ] && [ -z "$line" ] && [ "$rc" = 0 ] && grep -q 'no GPU found' "$tmp/rest"; then
    echo "PASS  cuda: grpo_cuda and tests/test_cuda build                     no GPU here: kernels not run"
    total_pass=$((total_pass + 1)); continue
  fi
  if [ -z "$line" ]; then
    fail "$run: crashed or printed no summary (exit $rc); what it printed after its last check:"
    sed 1,2d "$tmp/rest" | tail -n 20 | indent
    continue
  fi
  p=${line%% passed*}; f=${line#*, }; f=${f%% failed}
  total_pass=$((total_pass + p)); total_fail=$((total_fail + f))
  if [ "$f" -gt "$nfail" ]; then   # failures counted but not printed as FAIL lines
    echo "FAIL  $run: '$line', $nfail of them printed; what it printed after its last check:"
    sed 1,2d "$tmp/rest" | tail -n 20 | indent
  fi
  [ "$rc" -ne 0 ] && [ "$f" = 0 ] && fail "$run: exit status $rc after '$line'"
  [ "$rc" -ne 0 ] && status=1
done
echo "$total_pass passed, $total_fail failed"
exit $status
