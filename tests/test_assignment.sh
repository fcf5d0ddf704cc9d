#!/bin/sh
# tests/test_assignment.sh: checks the course-assignment tooling (part of make test).
#   1. tests/make_assignment.sh finds the solution regions of grpo.c and writes a student
#      copy with no solution left in it, which compiles (no warnings beyond grpo.c's own);
#   2. tests/grade.sh gives grpo.c every check, with the table in step with the suite;
#   3. it gives the all-stub copy zero for every function and end-to-end row;
#   4. for each function, a copy with only that function stubbed scores zero on it
#      (so the single-assignment copies of notes/assignments.md give no free marks);
#   5. what grade.sh prints: no compiler warnings of its own blamed on the student, the
#      student's own warnings with their line, the detail lines of failed checks (for an
#      off-by-one in prefix_tree first a |λ| row, got against expected), and for a crash the
#      signal and (with AddressSanitizer) what was overflowed, where;
#   6. make assignment does not overwrite an edited copy without FORCE=1;
#   7. make figures writes to runs/figures unless OUT= says otherwise, and notes/plot.py
#      names each missing log with the command that writes it (needs python3, not matplotlib);
#   8. the grading runs leave nothing in TMPDIR (the suite's run directories included).
# Prints PASS/FAIL lines and ends with `N passed, N failed`; exit status 1 on any failure.
# Needs sh, awk and the C compiler; Python only for 7. 11 grading runs in parallel (one with
# an AddressSanitizer build): about 25 s of CPU, 15-40 s of wall time on 2 cores.
set -u
cd "$(dirname "$0")/.."
CC=${CC:-cc}
FLAGS="-O1 -Wall -Wextra -Wno-unused-function"
OMP=$(printf 'int main(void){return 0;}' | $CC -fopenmp -x c - -o /dev/null 2>/dev/null && echo -fopenmp)
[ -n "$OMP" ] || FLAGS="$FLAGS -Wno-unknown-pragmas"
IDS=$(sh tests/grade.sh --rows | awk '$2 == "f" { print $1 }' | tr '\n' ' ')      # the graded functions
E2E=$(sh tests/grade.sh --rows | awk '$2 == "e" { print $1 }' | tr '\n' ' ')      # end-to-end rows
NF=$(echo $IDS | wc -w | tr -d ' ')
tmp=$(mktemp -d "${TMPDIR:-/tmp}/grpo_asg_test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
passed=0; failed=0
check() {   # check OK NAME DETAIL
  if [ "$1" = 1 ]; then printf 'PASS  %-58s %s\n' "$2" "$3"; passed=$((passed + 1))
  else printf 'FAIL  %-58s %s\n' "$2" "$3"; failed=$((failed + 1)); fi
}
t0=$(date +%s)

# 1. regions and the student copy
sh tests/make_assignment.sh -l > "$tmp/regions" 2>&1
found=$(awk '{print $1}' "$tmp/regions" | awk '!s[$0]++' | tr '\n' ' ' | sed 's/ $//')
want=$(for id in $IDS; do echo $id; done | sort | tr '\n' ' ' | sed 's/ $//')
got=$(for id in $found; do echo $id; done | sort | tr '\n' ' ' | sed 's/ $//')
check "$([ "$got" = "$want" ] && [ "$NF" -gt 0 ] && echo 1)" "assignment: marked regions == grade.sh's functions" "$(wc -l < "$tmp/regions") regions, ids: $found"
ok=0; sh tests/make_assignment.sh -o "$tmp/all/grpo.c" > "$tmp/mk.log" 2>&1 && ok=1
check $ok "assignment: make_assignment.sh writes the student copy" "$(tail -1 "$tmp/mk.log")"
left=$(grep -c 'SOLUTION' "$tmp/all/grpo.c" 2>/dev/null); todos=$(grep -c 'TODO(' "$tmp/all/grpo.c" 2>/dev/null)
check "$([ "$left" = 0 ] && [ "$todos" = "$(wc -l < "$tmp/regions")" ] && echo 1)" "assignment: no solution markers left, one TODO per region" "$todos TODOs, $left markers"
sh tests/make_assignment.sh -o "$tmp/none.c" no_such_id > /dev/null 2>&1
check "$([ ! -f "$tmp/none.c" ] && echo 1)" "assignment: an unknown id is an error" ""
# nothing outside the regions changes: with no stubs the copy is grpo.c minus the marker lines
grep -Ev '^[[:space:]]*/\* (BEGIN|END) SOLUTION' grpo.c > "$tmp/ref_nomarkers.c"
sh tests/make_assignment.sh -n -o "$tmp/nostub.c" > /dev/null 2>&1
check "$(cmp -s "$tmp/ref_nomarkers.c" "$tmp/nostub.c" && echo 1)" "assignment: markers only: grpo.c minus them is the program" ""
ok=1
for id in $IDS; do
  sh tests/make_assignment.sh -o "$tmp/one_$id/grpo.c" "$id" > /dev/null 2>&1 || ok=0
  n=$(grep -c "TODO(" "$tmp/one_$id/grpo.c" 2>/dev/null); r=$(awk -v id="$id" '$1 == id' "$tmp/regions" | wc -l)
  [ "$n" = "$r" ] || ok=0
done
check $ok "assignment: one copy per function (make assignment IDS=...)" "$(echo $IDS | wc -w) copies"
$CC $FLAGS $OMP grpo.c -o "$tmp/ref_bin" -lm > "$tmp/ref_cc.log" 2>&1
ref_warn=$(grep -c 'warning:' "$tmp/ref_cc.log")
ok=0; $CC $FLAGS $OMP "$tmp/all/grpo.c" -o "$tmp/all_bin" -lm > "$tmp/all_cc.log" 2>&1 && ok=1
all_warn=$(grep -c 'warning:' "$tmp/all_cc.log")
[ "$all_warn" -le "$ref_warn" ] || ok=0
check $ok "assignment: the student copy compiles (-Wall -Wextra)" "$all_warn warnings (grpo.c: $ref_warn)$( [ $ok = 1 ] || { echo; sed 's/^/      /' "$tmp/all_cc.log" | head -20; })"

# A student's tree code that reads and writes past the end of a completion (the len check
# dropped), with an unused variable: grade.sh must name the warning's line and the overflow.
mkdir -p "$tmp/crash"
sed -e 's/same = in->len\[members\[a\]\] > next && in->tokens/same = in->tokens/' \
    -e 's/^\( *\)int id = tree->num_nodes++;/&\
\1int unused_in_tree;/' grpo.c > "$tmp/crash/grpo.c"
mutated=$(diff grpo.c "$tmp/crash/grpo.c" | grep -c '^>')
warn_line=$(grep -n 'int unused_in_tree;' "$tmp/crash/grpo.c" | cut -d: -f1)
# An off-by-one at the tree's root: the completions are not split by their first token, so
# |λ(i,0)| counts the completions that share tokens 0..-1 (all of them). grade.sh must show the
# case a student can act on, got against expected, first.
mkdir -p "$tmp/obo"
sed 's/^\( *\)while (b < nonempty && tokens\[tree->members\[b\]\]\[0\] == .*/\1b = nonempty;/' grpo.c > "$tmp/obo/grpo.c"
obo_mutated=$(diff grpo.c "$tmp/obo/grpo.c" | grep -c '^>')

# the grading runs are independent single-threaded processes: run them all at once, with a
# TMPDIR of their own, which must be empty afterwards (grade.sh's directory and the suite's
# run directories in it, also of the stubbed copies' failing and crashing groups)
gtmp="$tmp/grade_tmpdir"
mkdir "$gtmp"
# (grpo.c's and the off-by-one's with 120 s per group: 11 runs at once on 2 cores took grpo.c's
# model group past 30 s)
TMPDIR="$gtmp" GRADE_TIMEOUT=120 sh tests/grade.sh grpo.c > "$tmp/grade_ref.txt" 2>&1 &
TMPDIR="$gtmp" GRADE_ASAN=0 sh tests/grade.sh "$tmp/all/grpo.c" > "$tmp/grade_all.txt" 2>&1 &
for id in $IDS; do   # -O0: these only have to score zero, and compile twice as fast
  TMPDIR="$gtmp" GRADE_ASAN=0 GRADE_CFLAGS="-O0 -Wall -Wextra -Wno-unused-function" \
    sh tests/grade.sh "$tmp/one_$id/grpo.c" "$id" > "$tmp/grade_$id.txt" 2>&1 &
done
TMPDIR="$gtmp" sh tests/grade.sh "$tmp/crash/grpo.c" prefix_tree > "$tmp/grade_crash.txt" 2>&1 &
TMPDIR="$gtmp" GRADE_ASAN=0 GRADE_TIMEOUT=120 sh tests/grade.sh "$tmp/obo/grpo.c" prefix_tree > "$tmp/grade_obo.txt" 2>&1 &
wait
gleft=$(ls -A "$gtmp" | tr '\n' ' ')
check "$([ -z "$gleft" ] && echo 1)" "grade: leaves nothing in TMPDIR" "${gleft:-empty}"

# 2. the reference gets every check
last=$(tail -1 "$tmp/grade_ref.txt")
ok=$(echo "$last" | awk -v nf="$NF" '{ split($2, c, "/"); split($4, f, "/"); split($6, e, "/") }
  c[1] == c[2] && c[2] > 0 && f[1] == f[2] && f[2] == nf && e[1] == e[2] { print 1 }')
drift=$(grep -Ec 'update the table|did not print|does not compile' "$tmp/grade_ref.txt")
check "$ok" "grade: grpo.c gets full marks" "$last"
[ "$ok" = 1 ] && [ "$drift" = 0 ] || sed 's/^/      /' "$tmp/grade_ref.txt"   # under the FAIL line
check "$([ "$drift" = 0 ] && echo 1)" "grade: its table matches the suite's check names and counts" "$(grep 'update the table' "$tmp/grade_ref.txt" | head -3)"

# 3. the all-stub copy gets zero everywhere
last=$(tail -1 "$tmp/grade_all.txt")
for id in $IDS $E2E; do
  score=$(awk -v id="$id" '$1 == id { print $2 }' "$tmp/grade_all.txt")
  check "$(echo "$score" | awk -F/ '$1 == 0 && $2 > 0 { print 1 }')" "grade: the stub copy scores 0 on $id" "$score"
done
check "$(echo "$last" | grep -q "^grade: 0/[1-9][0-9]* checks, 0/$NF functions" && echo 1)" "grade: the stub copy's summary line" "$last"

# 4. each function's own stub scores zero on it
for id in $IDS; do
  score=$(awk -v id="$id" '$1 == id { print $2 }' "$tmp/grade_$id.txt")
  check "$(echo "$score" | awk -F/ '$1 == 0 && $2 > 0 { print 1 }')" "grade: only $id stubbed -> 0 on $id" "$score"
done

# 5. what grade.sh prints
check "$(grep -q 'compiler warning' "$tmp/grade_ref.txt" || echo 1)" "grade: no harness warnings blamed on grpo.c" \
  "$(grep 'compiler warning' "$tmp/grade_ref.txt")"
check "$(grep -q 'FAIL  ' "$tmp/grade_all.txt" && awk '/^    FAIL  /{f=1; next} f && /^      .*got .*expected/{ok=1} {f=0} END{exit !ok}' "$tmp/grade_all.txt" && echo 1)" \
  "grade: a failed check shows its detail lines" "$(grep -c 'got .*expected' "$tmp/grade_all.txt") detail lines"
# the off-by-one: under "prefix_tree:" first a FAIL line, then its |λ| row, got against expected
lead=$(awk '/^  prefix_tree:$/ { getline f; getline d; print f; print d; exit }' "$tmp/grade_obo.txt")
check "$([ "$obo_mutated" = 1 ] && echo "$lead" | head -1 | grep -q '^    FAIL  tree: ' &&
         echo "$lead" | tail -1 | grep -Eq '^ +\|λ\| along it: got \[3,2,2\], expected \[2,2,2\]$' && echo 1)" \
  "grade: an off-by-one in prefix_tree shows got against expected first" "$(echo "$lead" | tail -1 | sed 's/^ *//')"
[ -n "$(echo "$lead" | tail -1 | grep 'got')" ] || sed 's/^/      /' "$tmp/grade_obo.txt"
check "$([ "$mutated" = 2 ] && [ -n "$warn_line" ] && echo 1)" "grade: the crash test's copy of grpo.c (2 lines changed)" "$mutated lines"
check "$(grep -q "^grade: 1 compiler warning(s) in $tmp/crash/grpo.c" "$tmp/grade_crash.txt" &&
         grep -q "grpo.c:$warn_line:[0-9]*: warning: unused variable" "$tmp/grade_crash.txt" && echo 1)" \
  "grade: the student's warning, with its line" "$(grep -A1 'compiler warning' "$tmp/grade_crash.txt" | tail -1)"
check "$(grep -Eq '^grade: group tree crashed \(signal [0-9]+, SIG[A-Z]+: ' "$tmp/grade_crash.txt" && echo 1)" \
  "grade: a crashed group names its signal" "$(grep '^grade: group tree' "$tmp/grade_crash.txt" | cut -c1-90)"
if printf 'int main(void){return 0;}' | $CC -fsanitize=address,undefined -x c - -o "$tmp/asan_probe" > /dev/null 2>&1 && "$tmp/asan_probe"; then
  # tree group: a read past the end of the test's token buffer, in tree_add_node's len check
  check "$(sed -n '/^grade: group tree crashed/,/^grade: /p' "$tmp/grade_crash.txt" | grep -q 'AddressSanitizer: heap-buffer-overflow' &&
           grep -Eq '^      in   tree_add_node .*grpo.c:[0-9]+:  *same = ' "$tmp/grade_crash.txt" &&
           grep -q 'bytes to the right of a [0-9]*-byte region' "$tmp/grade_crash.txt" && echo 1)" \
    "grade: a crash says what overflowed, in which function and line" "$(grep -m1 '^      in   tree_add_node' "$tmp/grade_crash.txt" | cut -c1-80)"
else
  echo "# no AddressSanitizer with $CC here: the overflow report is not checked"
fi

# 6. make assignment does not overwrite an edited copy
sh tests/make_assignment.sh -o "$tmp/edit/grpo.c" > /dev/null 2>&1
ok=0; sh tests/make_assignment.sh -o "$tmp/edit/grpo.c" prefix_tree > /dev/null 2>&1 && ok=1   # not edited: rewritten
echo '/* my work */' >> "$tmp/edit/grpo.c"
sh tests/make_assignment.sh -o "$tmp/edit/grpo.c" > "$tmp/edit.log" 2>&1 && ok=0
tail -1 "$tmp/edit/grpo.c" | grep -q 'my work' || ok=0
grep -q 'FORCE=1' "$tmp/edit.log" || ok=0
check $ok "assignment: an edited copy is not overwritten" "$(head -1 "$tmp/edit.log" | cut -c1-80)"
ok=0; FORCE=1 sh tests/make_assignment.sh -o "$tmp/edit/grpo.c" > /dev/null 2>&1 && ok=1
tail -1 "$tmp/edit/grpo.c" | grep -q 'my work' && ok=0
check $ok "assignment: FORCE=1 overwrites it" ""

# 7. make figures
if command -v make > /dev/null 2>&1; then
  ok=1
  make -n figures 2>&1 | grep -q -- '--out runs/figures$' || ok=0
  make -n figures OUT=notes/figures 2>&1 | grep -q -- '--out notes/figures$' || ok=0
  OUT=/elsewhere make -n figures 2>&1 | grep -q -- '--out runs/figures$' || ok=0
  check $ok "figures: make figures writes runs/figures unless OUT=" "$(make -n figures 2>&1 | tail -1)"
fi
if command -v python3 > /dev/null 2>&1; then
  ok=0; python3 notes/plot.py --runs "$tmp/noruns" --out "$tmp/fig" > "$tmp/plot.log" 2>&1 || ok=1
  for want in "$tmp/noruns/tree/tree_steps.csv" "./grpo tree --seeds 20 --run-dir $tmp/noruns/tree" \
              "--group-size 6 --steps 300 --run-dir $tmp/noruns/stats_k6" "--group-size 36 --steps 100 --run-dir $tmp/noruns/stats_k36" \
              "./grpo train --run-dir $tmp/noruns/grpo " "./grpo train --objective grpo --run-dir $tmp/noruns/grpo_plain"; do
    grep -qF -- "$want" "$tmp/plot.log" || ok=0
  done
  [ -e "$tmp/fig" ] && ok=0
  check $ok "figures: no logs: each missing one with its command, exit 1" "$(tail -1 "$tmp/plot.log" | cut -c1-80)"
  if [ -x ./grpo ]; then   # a real log for one figure: it is drawn, the others are named as skipped
    ./grpo tree --seeds 1 --steps 3 --threads 1 --run-dir "$tmp/runs/tree" > /dev/null 2>&1
    rc=0; python3 notes/plot.py --runs "$tmp/runs" --out "$tmp/fig" > "$tmp/plot2.log" 2>&1 || rc=$?
    if python3 -c 'import matplotlib' 2> /dev/null; then
      check "$([ $rc = 0 ] && [ -s "$tmp/fig/tree_task.png" ] && grep -q 'drew 1 of 3 figures' "$tmp/plot2.log" && echo 1)" \
        "figures: the figure whose log exists is drawn" "$(tail -1 "$tmp/plot2.log" | cut -c1-80)"
    else
      check "$([ $rc = 1 ] && grep -q 'pip install matplotlib' "$tmp/plot2.log" && echo 1)" \
        "figures: without matplotlib, plot.py says how to install it" "$(tail -1 "$tmp/plot2.log" | cut -c1-80)"
    fi
  fi
fi

echo "# test_assignment.sh: $(( $(date +%s) - t0 )) s"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
