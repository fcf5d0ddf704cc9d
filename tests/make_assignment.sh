#!/bin/sh
# tests/make_assignment.sh: the student copy of grpo.c (make assignment; notes/assignments.md).
#
#   sh tests/make_assignment.sh [-i grpo.c] [-o build/assignment/grpo.c] [ID ...]
#   sh tests/make_assignment.sh -l [-i grpo.c]        # list the solution regions
#   sh tests/make_assignment.sh -n [-i ...] [-o ...]  # no stubs: only drop the markers
#   -f (or FORCE=1): overwrite the output even when it was edited since this script wrote it
#
# grpo.c marks the bodies a student writes:
#
#     static int f(int a, float *b) {
#         /* BEGIN SOLUTION: <id> */                   (or: /* BEGIN SOLUTION: <id> stub: <C> */)
#         ...the reference body...
#         /* END SOLUTION: <id> */
#     }
#
# A region is the whole body of one function; an id may mark several functions (the
# helpers that belong to one exercise). For every region of a selected id (all ids when
# none is named) the copy gets a TODO comment, (void) casts of the function's parameters,
# and a stub: the C after "stub:" when the marker gives one, else nothing for a void
# function and `return 0;` for any other. Regions of ids not selected keep the reference
# body; every marker line is dropped. The copy compiles wherever grpo.c does, and the
# stubs are chosen to fail every graded check (tests/test_assignment.sh verifies both).
# The output is never overwritten once edited: the checksum of what this script wrote is kept
# beside it (.<name>.written), and a file that no longer matches it, and differs from the new
# copy, is a student's work; the script then stops (exit 1) unless -f or FORCE=1.
# Needs only sh and a POSIX awk.
set -eu
cd "$(dirname "$0")/.."
in=grpo.c; out=build/assignment/grpo.c; list=0; none=0
force=0; case ${FORCE:-0} in ""|0) ;; *) force=1 ;; esac
while getopts "i:o:lnfh" opt; do
  case $opt in
    i) in=$OPTARG ;;
    o) out=$OPTARG ;;
    l) list=1 ;;
    n) none=1 ;;
    f) force=1 ;;
    *) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ -f "$in" ] || { echo "make_assignment: $in: no such file" >&2; exit 2; }
ids=$*

# The one awk program: mode "list" prints "id function line" per region; mode "strip"
# writes the copy. Both check that the markers are well formed.
strip() {
  awk -v mode="$1" -v want="$ids" -v none="$none" -v src="$in" '
  function fail(msg) { printf "make_assignment: %s:%d: %s\n", src, NR, msg > "/dev/stderr"; bad = 1; exit 2 }
  function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }
  # the signature of the function whose body a marker sits in: name, void-ness, (void) casts
  function parse_sig(s,    head, params, n, parts, i, p, casts) {
    head = s; sub(/\(.*/, "", head); head = trim(head)
    fname = head; sub(/.*[^A-Za-z_0-9]/, "", fname)
    sub(/[A-Za-z_][A-Za-z_0-9]*$/, "", head)
    gsub(/(^|[ \t])(static|inline|extern)[ \t]/, " ", head)
    is_void = trim(head) == "void"
    params = s; sub(/^[^(]*\(/, "", params); sub(/\)[^)]*$/, "", params)
    n = split(params, parts, ","); casts = ""
    for (i = 1; i <= n; i++) {
      p = parts[i]; gsub(/\[[^]]*\]/, "", p); p = trim(p)
      if (p == "void" || p == "" || !match(p, /[A-Za-z_][A-Za-z_0-9]*$/)) continue
      casts = casts "(void)" substr(p, RSTART, RLENGTH) "; "
    }
    void_casts = trim(casts)
  }
  BEGIN {
    nw = split(want, w, /[ \t,]+/)
    for (i = 1; i <= nw; i++) if (w[i] != "") { selected[w[i]] = 1; nsel++ }
    if (mode == "strip" && !none)
      printf "/* Student copy of %s written by tests/make_assignment.sh: TODO stubs in %s.\n   Grade it with: make grade SRC=<this file>  (notes/assignments.md) */\n", src, nsel ? want : "every solution region"
  }
  # signatures: a line at column 0 with "(" that is not a prototype, up to the line ending in "{"
  !in_region && !in_sig && /^[A-Za-z_][^;]*\(/ && !/^(typedef|#)/ && !/;[ \t]*(\/\/.*)?$/ { in_sig = 1; sig = "" }
  in_sig {
    sig = sig " " $0
    if ($0 ~ /\{[ \t]*$/) { in_sig = 0; parse_sig(sig); have_sig = 1 }
    else if ($0 ~ /;[ \t]*$/ || $0 ~ /\{.*\}[ \t]*(\/\/.*)?$/) { in_sig = 0; have_sig = 0 }   # prototype, one-line body
  }
  /^[ \t]*\/\* BEGIN SOLUTION/ {
    if (in_region) fail("BEGIN SOLUTION inside the region opened at line " start)
    line = $0; sub(/^[ \t]*\/\* BEGIN SOLUTION:[ \t]*/, "", line)
    if (line !~ /\*\/[ \t]*$/) fail("a marker is one line: /* BEGIN SOLUTION: <id> [stub: <C>] */")
    sub(/[ \t]*\*\/[ \t]*$/, "", line)
    id = line; sub(/[ \t].*/, "", id)
    stub = ""
    if (line ~ /^[A-Za-z_0-9]+[ \t]+stub:/) { stub = line; sub(/^[A-Za-z_0-9]+[ \t]+stub:[ \t]*/, "", stub) }
    else if (id != line) fail("after the id only \"stub: <C>\" may follow")
    if (id !~ /^[A-Za-z_][A-Za-z_0-9]*$/) fail("bad region id \"" id "\"")
    if (!have_sig) fail("BEGIN SOLUTION outside a function body")
    indent = $0; sub(/[^ \t].*/, "", indent)
    in_region = 1; start = NR; regions[id]++; body_lines = 0
    if (!(id in first_line)) { first_line[id] = NR; order[++nids] = id }
    if (mode == "list") printf "%-20s %-22s line %d\n", id, fname, NR
    strip_it = !none && (nsel == 0 || (id in selected))
    if (mode == "strip" && strip_it) {
      print indent "/* TODO(" id "): write the body of " fname "() (notes/assignments.md)."
      print indent "   The stub below only makes the file compile; it fails the tests. */"
      if (void_casts != "") print indent void_casts
      if (stub != "") print indent stub
      else if (!is_void) print indent "return 0;"
      nstubbed++
    }
    next
  }
  /^[ \t]*\/\* END SOLUTION/ {
    if (!in_region) fail("END SOLUTION without BEGIN SOLUTION")
    eid = $0; sub(/^[ \t]*\/\* END SOLUTION:?[ \t]*/, "", eid); sub(/[ \t]*\*\/[ \t]*$/, "", eid)
    if (eid != id) fail("END SOLUTION: " eid " closes the region " id " opened at line " start)
    if (body_lines == 0) fail("empty region " id)
    in_region = 0; have_sig = 0
    next
  }
  /^[ \t]*\/\*[ \t]*(BEGIN|END)[ \t]+SOLUTION/ { fail("malformed marker (want /* BEGIN SOLUTION: <id> */ or /* END SOLUTION: <id> */)") }
  in_region { body_lines++; if (mode == "strip" && !strip_it) print; next }
  mode == "strip" { print }
  END {
    if (bad) exit 2
    if (in_region) { NR = start; fail("region " id " is never closed") }
    for (s in selected) if (!(s in regions)) { printf "make_assignment: no region with id \"%s\" in %s (ids:", s, src > "/dev/stderr"; for (i = 1; i <= nids; i++) printf " %s", order[i] > "/dev/stderr"; print ")" > "/dev/stderr"; exit 2 }
    if (nids == 0) { print "make_assignment: " src " has no BEGIN SOLUTION markers" > "/dev/stderr"; exit 2 }
    if (mode == "strip") printf "%d\n", nstubbed > "/dev/stderr"
  }' "$in"
}

if [ "$list" = 1 ]; then strip list; exit 0; fi
mkdir -p "$(dirname "$out")"
tmp="$out.tmp.$$"
trap 'rm -f "$tmp" "$tmp.n"' EXIT
trap 'exit 130' INT TERM
strip strip > "$tmp" 2> "$tmp.n" || { cat "$tmp.n" >&2; exit 2; }
stamp=$(dirname "$out")/.$(basename "$out").written    # cksum of the copy written last time
if [ -f "$out" ] && ! cmp -s "$tmp" "$out" && [ $force = 0 ] &&
   ! { [ -f "$stamp" ] && [ "$(cksum < "$out")" = "$(cat "$stamp")" ]; }; then
  {
    echo "make_assignment: $out was edited since it was written (or not written by this script): not overwriting it."
    echo "  Keep your work first, e.g.:  mkdir -p student && cp $out student/grpo.c"
    echo "  then overwrite it:           make assignment FORCE=1  (sh tests/make_assignment.sh -f ...)"
  } >&2
  exit 1
fi
mv "$tmp" "$out"
cksum < "$out" > "$stamp"
echo "make_assignment: wrote $out ($(cat "$tmp.n") regions replaced by TODO stubs: $([ $none = 1 ] && echo none || echo "${ids:-all ids}"))"
