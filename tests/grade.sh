#!/bin/sh
# tests/grade.sh: grades a student's grpo.c (make grade SRC=...; notes/assignments.md).
#
#   sh tests/grade.sh SRC [ID ...]      ID: a row of the table below (default: all rows)
#   sh tests/grade.sh --rows            the rows: "id f" (a function) or "id e" (end to end)
#
# Compiles tests/test_grpo.c against SRC (-DGRPO_SRC) and SRC itself (the `check` group runs
# it as ./grpo check), runs each test group the graded checks live in as its own process,
# single-threaded, under a time limit, and scores each function by its checks (the table
# below). A check that is not printed (the group crashed, timed out or did not compile)
# counts as failed; checks printed before a crash still count. Prints the compiler warnings
# located in SRC, the failed checks with their detail lines (a function's first check to show
# got against expected first, the case a student can act on), for a group that crashed the
# signal and what AddressSanitizer finds when the group is rerun under it, a table
# `function passed/total score`, and last a line
#   grade: P/T checks, F/N functions, E/M end-to-end
# Exit status 0 whenever grading ran, whatever the score; 2 on a usage error.
# Environment: CC (cc), GRADE_CFLAGS (-O1 -Wall -Wextra -Wno-unused-function),
# GRADE_TIMEOUT seconds per group (30), GRADE_THREADS (1), GRADE_ASAN=0 (no AddressSanitizer
# rerun of a crashed group), GRADE_VERBOSE=1 (the whole compiler output and every check line).
set -u
cd "$(dirname "$0")/.."

# The graded checks: row | kind | group | test-name prefix (as printed after PASS/FAIL) | count
# (the last field is the count, so a name may contain "|").
# kind f = a function a student writes (a solution region of grpo.c, same id);
# kind e = end to end: needs several functions right at once.
# Each check here fails when its row's function is the TODO stub (tests/test_assignment.sh
# verifies that and that grpo.c gets every check).
SPEC='compute_advantages|f|objective|advantage: |8
compute_advantages|f|objective|worked example: advantages|1
grpo_token_loss|f|objective|kl: |2
grpo_token_loss|f|objective|clip: |4
grpo_token_loss|f|objective|objective: ratio is exactly 1|1
loss_agg_coef|f|objective|loss-agg: lengths 3,7 adv ±1 ratio 1: token-mean = |1
loss_agg_coef|f|objective|loss-agg: lengths 3,7 adv ±1 ratio 1: seq-mean-token-mean = |1
loss_agg_coef|f|objective|loss-agg: lengths 3,7 adv ±1 ratio 1: seq-mean-token-sum = |1
loss_agg_coef|f|objective|loss-agg: lengths 3,7 adv ±1 ratio 1: seq-mean-token-sum-norm = |1
loss_agg_coef|f|objective|loss-agg: coefficients|1
prefix_tree|f|tree|tree: |7
prefix_tree|f|objective|worked example: |λ| along|1
prefix_tree|f|objective|worked example: node JKL|1
lambda_weight|f|objective|worked example: λ-GRPO net coefficients|1
lambda_weight|f|objective|λ-GRPO: loss == each tree node once|1
lambda_weight|f|objective|λ-GRPO: gradient == each tree node once|1
attention_backward|f|model|model: d loss/d wte vs|1
attention_backward|f|model|model: d loss/d wpe vs|1
attention_backward|f|model|model: d loss/d ln1w vs|1
attention_backward|f|model|model: d loss/d ln1b vs|1
attention_backward|f|model|model: d loss/d qkvw vs|1
attention_backward|f|model|model: d loss/d qkvb vs|1
attention_backward|f|model|model: d loss/d attprojw vs|1
attention_backward|f|model|model: d loss/d attprojb vs|1
attention_backward|f|model|model: d loss/d ln2w vs|1
attention_backward|f|model|model: d loss/d ln2b vs|1
attention_backward|f|model|model: d loss/d fcw vs|1
attention_backward|f|model|model: d loss/d fcb vs|1
attention_backward|f|model|model: d loss/d fcprojw vs|1
attention_backward|f|model|model: d loss/d fcprojb vs|1
attention_backward|f|model|model: d(Σ w·logp|1
attention_backward|f|model|model: gradient vs central finite differences|1
adamw_update|f|model|model: losses of 5 AdamW steps|1
adamw_update|f|model|model: parameters after 5 AdamW steps|1
add_task|f|verifier|chain-sum: verifier on hand-written cases|1
add_task|f|verifier|chain-sum: prompt parser cases|1
add_task|f|verifier|chain-sum: well-formedness|1
identities|e|objective|worked example: GRPO net coefficients|1
identities|e|objective|theorem 1: |3
identities|e|objective|λ-GRPO: equals GRPO exactly|1
identities|e|objective|micro-batch: |2
fixtures|e|check|check fixture |19'

usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 1 ] || usage
case $1 in
  -h|--help) usage ;;
  --rows) printf '%s\n' "$SPEC" | awk -F'|' '!seen[$1]++ { print $1, $2 }'; exit 0 ;;   # "id f|e" per row
esac
src=$1; shift
[ -f "$src" ] || { echo "grade: $src: no such file" >&2; exit 2; }
case $src in /*) abs=$src ;; *) abs=$(pwd)/$src ;; esac
case $abs in *'"'*|*'\'*) echo "grade: the path may not contain quotes or backslashes: $abs" >&2; exit 2 ;; esac
grep -q '^#include GRPO_SRC' tests/test_grpo.c ||
  { echo "grade: tests/test_grpo.c does not #include GRPO_SRC, so it cannot test another file" >&2; exit 2; }
rows=$(printf '%s\n' "$SPEC" | cut -d'|' -f1 | awk '!seen[$0]++')
sel=$*
for id in $sel; do
  printf '%s\n' "$rows" | grep -qx "$id" || { echo "grade: unknown function '$id' (one of: $(echo $rows))" >&2; exit 2; }
done
groups=$(printf '%s\n' "$SPEC" | awk -F'|' -v sel=" $sel " 'sel == "  " || index(sel, " " $1 " ") { print $3 }' | awk '!seen[$0]++' | tr '\n' ' ')

CC=${CC:-cc}
CFLAGS=${GRADE_CFLAGS:--O1 -Wall -Wextra -Wno-unused-function}
OMP=$(printf 'int main(void){return 0;}' | $CC -fopenmp -x c - -o /dev/null 2>/dev/null && echo -fopenmp)
[ -n "$OMP" ] || CFLAGS="$CFLAGS -Wno-unknown-pragmas"
TIMEOUT=${GRADE_TIMEOUT:-30}
THREADS=${GRADE_THREADS:-1}
VERBOSE=${GRADE_VERBOSE:-0}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/grpo_grade.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

echo "grade: $src ($(echo $groups | sed 's/ /, /g') groups; $CC $CFLAGS $OMP; $THREADS thread(s), ${TIMEOUT}s per group)"
# the test suite against SRC, and SRC as a program for `./grpo check`
built=1
if ! $CC $CFLAGS $OMP -DGRPO_SRC="\"$abs\"" tests/test_grpo.c -o "$tmp/test_grpo" -lm > "$tmp/cc.log" 2>&1; then
  built=0
  echo "grade: $src does not compile with the test suite (every check counts as failed):"
  grep -E 'error' "$tmp/cc.log" | head -15 | sed 's/^/    /'
fi
case " $groups " in *" check "*) need_bin=1 ;; *) need_bin=0 ;; esac
if [ $built = 1 ] && [ $need_bin = 1 ]; then
  $CC $CFLAGS $OMP "$abs" -o "$tmp/grpo" -lm > "$tmp/cc_bin.log" 2>&1 || echo "grade: $src does not compile as a program (./grpo check)"
fi
# path -> the name the user gave (awk: no regex on the path)
shorten() {
  awk -v abs="$abs" -v src="$src" '{ o = ""; while ((i = index($0, abs)) > 0) { o = o substr($0, 1, i - 1) src; $0 = substr($0, i + length(abs)) }; print o $0 }'
}
if [ $built = 1 ]; then
  # only the warnings located in SRC are the student's: the harness's own (a stub that leaves
  # an output unwritten makes test_grpo.c's reads of it "maybe uninitialized") are not
  awk -v f="$abs:" 'index($0, f) == 1 && / warning: /' "$tmp/cc.log" | shorten > "$tmp/warn.log"
  nwarn=$(wc -l < "$tmp/warn.log" | tr -d ' ')
  if [ "$VERBOSE" = 1 ]; then sed 's/^/    /' "$tmp/cc.log"
  elif [ "$nwarn" -gt 0 ]; then
    echo "grade: $nwarn compiler warning(s) in $src$([ "$nwarn" -gt 8 ] && echo ', the first 8'):"
    head -8 "$tmp/warn.log" | sed 's/^/    /'
  fi
fi

to=""; to_asan=""
if command -v timeout > /dev/null 2>&1; then to="timeout -k 5 $TIMEOUT"; to_asan="timeout -k 5 $((3 * TIMEOUT))"
else echo "grade: no timeout(1) here: a group that hangs is not stopped"; fi
crashed=""
signal_name() {
  case $1 in
    4) echo "signal 4, SIGILL: an illegal instruction" ;;
    6) echo "signal 6, SIGABRT: abort(), a failed assert or a corrupted heap" ;;
    7) echo "signal 7, SIGBUS: a bad memory access" ;;
    8) echo "signal 8, SIGFPE: an arithmetic fault, e.g. an integer division by zero" ;;
    11) echo "signal 11, SIGSEGV: a read or write outside the program's memory" ;;
    *) echo "signal $1" ;;
  esac
}
# The lines of an AddressSanitizer / UBSan report that say what happened, without addresses:
# the error, the access, up to 4 frames of each stack in our code (the first with its source
# line), where the memory lies (which allocation or stack variable).
asan_excerpt() {
  awk '
  function src_line(loc,   p, n, k, x) {
    n = split(loc, p, ":"); if (n < 2 || p[2] !~ /^[0-9]+$/) return ""
    k = 0; x = ""
    while ((getline x < p[1]) > 0) if (++k == p[2] + 0) break
    close(p[1]); if (k != p[2] + 0) return ""
    gsub(/^[ \t]+|[ \t]+$/, "", x); return substr(x, 1, 100)
  }
  function out(s) { if (nout++ < 30) print "    " s }
  /ERROR: AddressSanitizer: / { s = $0; sub(/.*ERROR: /, "", s); sub(/ on (unknown )?address.*/, "", s)
                                if (s ~ /stack-overflow/) s = s " (endless or too deep recursion)"
                                out(s); nframes = 0; firstf = 1; next }
  /runtime error: / { out("UndefinedBehaviorSanitizer: " $0); nframes = 0; firstf = 1; next }
  /^(READ|WRITE) of size/ { s = $0; sub(/ at 0x.*/, "", s); out(s); next }
  /The signal is caused by/ || /^Hint: / { s = $0; sub(/^==[0-9]+==/, "", s); out(s); next }
  /is located .* region/ { s = $0; sub(/^0x[0-9a-f]+ is located/, "the address is", s); sub(/ \[0x.*/, "", s)
                           if (match(s, / of [0-9]+-byte/)) s = substr(s, 1, RSTART + 3) "a " substr(s, RSTART + 4)
                           out(s); next }
  /is located in stack of thread/ { out("the address is on the stack, in the frame of:"); nframes = 0; firstf = 1; next }
  /<== Memory access/ { s = $0; sub(/^[ \t]+/, "", s); out("  " s)
                        if (match(s, /\(line [0-9]+\)/)) {   # the variable, declared in the frame'"'"'s file
                          x = src_line(lastfile ":" substr(s, RSTART + 6, RLENGTH - 7)); if (x != "") out("  declared as:  " x) }
                        next }
  /^(freed|previously allocated|allocated) by thread/ { s = $0; sub(/ by thread T[0-9]+ here:/, " at:", s); out(s); nframes = 0; firstf = 1; next }
  /^    #[0-9]+ / {
    fn = $4; loc = $5; if ($3 != "in") { fn = "?"; loc = $3 }
    if (fn ~ /^(__interceptor_|__asan|__ubsan|__sanitizer|__libc_|_start$|malloc_check$|calloc_check$|realloc_check$)/) next
    if (loc ~ /^\(|libsanitizer|sysdeps|csu\//) next   # "(binary+0x...)": no source
    if (nframes++ >= 4) next
    lastfile = loc; sub(/:.*/, "", lastfile)
    line = "  " (firstf ? "in   " : "from ") fn " " loc
    if (firstf) { x = src_line(loc); if (x != "") line = line ":  " x }
    firstf = 0; out(line); next }
  '
}
ASAN=${GRADE_ASAN:-1}
for g in $groups; do
  : > "$tmp/$g.out"
  if [ $built = 0 ]; then echo "did not compile" > "$tmp/$g.status"; continue; fi
  # TMPDIR: the suite makes its run's directory in ours, which goes with ours even when the
  # group crashes or times out
  OMP_NUM_THREADS=$THREADS GRPO_BIN="$tmp/grpo" TMPDIR="$tmp" $to "$tmp/test_grpo" "$g" \
    > "$tmp/$g.out" 2>&1 < /dev/null
  rc=$?
  if grep -Eq '^[0-9]+ passed, [0-9]+ failed$' "$tmp/$g.out"; then echo ok > "$tmp/$g.status"
  elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then echo "timed out after ${TIMEOUT}s" > "$tmp/$g.status"
  elif [ $rc -gt 128 ]; then
    # the crash is in the code that runs after the last check the group printed
    last=$(grep -E '^(PASS|FAIL)  ' "$tmp/$g.out" | tail -1 | cut -c7- | sed 's/   *.*//')
    echo "crashed ($(signal_name $((rc - 128))))$([ -n "$last" ] && echo " after its check \"$last\"" || echo ' before its first check')" > "$tmp/$g.status"
    crashed="$crashed $g"
  else echo "stopped (exit $rc) before its summary line" > "$tmp/$g.status"; fi
  if [ "$VERBOSE" = 1 ]; then sed "s/^/    [$g] /" "$tmp/$g.out"; fi
done

# A crashed group runs again from a build with AddressSanitizer (and UBSan), which stops at
# the first bad access and says what it was: which array, how far past its end, where it
# was allocated, and the line of code. The excerpt goes under the group's note below.
if [ -n "$crashed" ] && [ "$ASAN" = 1 ]; then
  echo "grade: group(s)$crashed crashed; rerunning under AddressSanitizer to find what overflowed (about 10 s; GRADE_ASAN=0 skips this)"
  if $CC -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined -w \
       -DGRPO_SRC="\"$abs\"" tests/test_grpo.c -o "$tmp/test_asan" -lm > "$tmp/cc_asan.log" 2>&1; then
    for g in $crashed; do
      ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 OMP_NUM_THREADS=1 GRPO_BIN="$tmp/grpo" TMPDIR="$tmp" \
        $to_asan "$tmp/test_asan" "$g" > "$tmp/$g.asan" 2>&1 < /dev/null
      arc=$?
      asan_excerpt < "$tmp/$g.asan" | shorten > "$tmp/$g.diag"
      if [ ! -s "$tmp/$g.diag" ]; then
        if [ $arc -eq 124 ] || [ $arc -eq 137 ]; then echo "    (under AddressSanitizer the group timed out after $((3 * TIMEOUT))s)"
        else echo "    (under AddressSanitizer the group ran without a report (exit $arc): the crash may depend on uninitialized memory)"; fi > "$tmp/$g.diag"
      fi
    done
  else
    echo "grade: no AddressSanitizer build here ($CC -fsanitize=address,undefined failed: $(head -1 "$tmp/cc_asan.log"))"
  fi
fi

printf '%s\n' "$SPEC" | awk -F'|' -v dir="$tmp" -v groups="$groups" -v sel=" $sel " '
  { if (sel != "  " && !index(sel, " " $1 " ")) next
    n++; row[n] = $1; kind[n] = $2; grp[n] = $3; cnt[n] = $NF + 0
    pre[n] = $4; for (j = 5; j < NF; j++) pre[n] = pre[n] "|" $j   # a name may hold "|"
    if (!($1 in rowseen)) { rowseen[$1] = 1; order[++nr] = $1; rkind[$1] = $2 } }
  END {
    ng = split(groups, gl, " ")
    for (gi = 1; gi <= ng; gi++) {
      g = gl[gi]; if (g == "") continue
      f = dir "/" g ".status"; getline status[g] < f; close(f)
      f = dir "/" g ".out"
      detail = ""; nd = 0
      while ((getline line < f) > 0) {
        if (line ~ /^      /) {   # a check prints its detail lines (which element, got, expected) before its PASS/FAIL line
          if (++nd <= 4) detail = detail "      " substr(line, 1, 150) "\n"
          continue
        }
        if (line !~ /^(PASS|FAIL)  /) continue
        if (nd > 4) detail = detail sprintf("      (%d more lines: GRADE_VERBOSE=1)\n", nd - 4)
        name = substr(line, 7)
        for (i = 1; i <= n; i++) {
          if (grp[i] != g || index(name, pre[i]) != 1) continue
          seen[i]++
          if (line ~ /^PASS/) pass[i]++
          else {   # the first that shows got against expected leads; then the others, in order
            r = row[i]; txt = "    " substr(line, 1, 200) "\n" detail
            if (!(r in lead) && detail ~ /got .*expected/) lead[r] = txt
            else if (nfl[r] < 6) fl[r, ++nfl[r]] = txt
          }
          break
        }
        detail = ""; nd = 0
      }
      close(f)
      if (status[g] != "ok") {
        notes = notes sprintf("grade: group %s %s: checks it did not print count as failed\n", g, status[g])
        f = dir "/" g ".diag"
        while ((getline line < f) > 0) notes = notes line "\n"
        close(f)
      }
    }
    for (i = 1; i <= n; i++) {
      tot = cnt[i] > seen[i] ? cnt[i] : seen[i]
      if (status[grp[i]] == "ok" && seen[i] != cnt[i])
        notes = notes sprintf("grade: %d checks named \"%s\" (expected %d): update the table in tests/grade.sh\n", seen[i], pre[i], cnt[i])
      rp[row[i]] += pass[i]; rt[row[i]] += tot
    }
    any = 0
    for (r = 1; r <= nr; r++) {
      id = order[r]; if (!(id in lead) && !nfl[id]) continue
      if (!any) print "failed checks (at most 6 per function; first the first to show got against expected):"
      any = 1; shown = id in lead; printf "  %s:\n%s", id, shown ? lead[id] : ""
      for (j = 1; j <= nfl[id] && shown < 6; j++) { printf "%s", fl[id, j]; shown++ }
    }
    printf "%s", notes
    printf "%-22s %13s %7s\n", "function", "passed/total", "score"
    for (k = 1; k <= 2; k++) {
      want = k == 1 ? "f" : "e"
      if (k == 2) { h = 0; for (r = 1; r <= nr; r++) if (rkind[order[r]] == "e") h = 1; if (h) print "end to end (several functions at once):" }
      for (r = 1; r <= nr; r++) {
        id = order[r]; if (rkind[id] != want) continue
        printf "%-22s %9d/%-3d %6.0f%%\n", id, rp[id], rt[id], 100 * rp[id] / rt[id]
        P += rp[id]; T += rt[id]
        if (want == "f") { nfun++; full_f += rp[id] == rt[id] } else { ne++; full_e += rp[id] == rt[id] }
      }
    }
    printf "%-22s %9d/%-3d %6.0f%%\n", "total", P, T, T ? 100 * P / T : 0
    printf "grade: %d/%d checks, %d/%d functions", P, T, full_f, nfun
    if (ne) printf ", %d/%d end-to-end", full_e, ne
    printf "\n"
  }'
exit 0
