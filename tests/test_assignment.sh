#!/bin/sh
# tests/test_assignment.sh: checks the course-assignment tooling (part of make test).
#   1. tests/make_assignment.sh finds the solution regions of grpo.c and writes a student
#      copy with no solution left in it, which compiles (no warnings beyond grpo.c's own);
#   2. tests/grade.sh gives grpo.c every check, with the table in step with the suite;
#   3. it gives the all-stub copy zero for every function and end-to-end row;
#   4. for each function, a copy with only that function stubbed scores zero on it
#      (so the single-assignment copies of notes/assignments.md give no free marks);
#   5. the grading runs leave nothing in TMPDIR (the suite's run directories included).
# Prints PASS/FAIL lines and ends with `N passed, N failed`; exit status 1 on any failure.
# Needs sh, awk and the C compiler; no Python. 9 grading runs in parallel: about 15 s of CPU,
# 10-30 s of wall time on 2 cores.
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

# the grading runs are independent single-threaded processes: run them all at once, with a
# TMPDIR of their own, which must be empty afterwards (grade.sh's directory and the suite's
# run directories in it, also of the stubbed copies' failing and crashing groups)
gtmp="$tmp/grade_tmpdir"
mkdir "$gtmp"
TMPDIR="$gtmp" sh tests/grade.sh grpo.c > "$tmp/grade_ref.txt" 2>&1 &
TMPDIR="$gtmp" sh tests/grade.sh "$tmp/all/grpo.c" > "$tmp/grade_all.txt" 2>&1 &
for id in $IDS; do   # -O0: these only have to score zero, and compile twice as fast
  TMPDIR="$gtmp" GRADE_CFLAGS="-O0 -Wall -Wextra -Wno-unused-function" \
    sh tests/grade.sh "$tmp/one_$id/grpo.c" "$id" > "$tmp/grade_$id.txt" 2>&1 &
done
wait
gleft=$(ls -A "$gtmp" | tr '\n' ' ')
check "$([ -z "$gleft" ] && echo 1)" "grade: leaves nothing in TMPDIR" "${gleft:-empty}"

# 2. the reference gets every check
last=$(tail -1 "$tmp/grade_ref.txt")
ok=$(echo "$last" | awk -v nf="$NF" '{ split($2, c, "/"); split($4, f, "/"); split($6, e, "/") }
  c[1] == c[2] && c[2] > 0 && f[1] == f[2] && f[2] == nf && e[1] == e[2] { print 1 }')
check "$ok" "grade: grpo.c gets full marks" "$last"
drift=$(grep -Ec 'update the table|did not print|does not compile' "$tmp/grade_ref.txt")
check "$([ "$drift" = 0 ] && echo 1)" "grade: its table matches the suite's check names and counts" "$(grep 'update the table' "$tmp/grade_ref.txt" | head -3)"
[ "$ok" = 1 ] && [ "$drift" = 0 ] || sed 's/^/      /' "$tmp/grade_ref.txt"

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

echo "# test_assignment.sh: $(( $(date +%s) - t0 )) s"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
