#!/bin/sh
# tests/check_docs.sh: checks the documentation against the repository (part of make test).
#   a. every Markdown link target in README.md and notes/*.md, and every relative file path
#      named in README.md, notes/*.md and grpo.c (notes/x.md, tests/y.sh, data/z.txt, ../p),
#      resolves to a file of the repository (tracked, or new and not ignored). A link is
#      relative to its file's folder; a path in prose that starts with notes/, tests/, data/
#      or .ci/ is relative to the repository root. A bare name ending in .md (paper.md) must be
#      the name of some file of the repository. An anchor (file.md#anchor) must be the GitHub
#      anchor of one of the target's headings. Not checked: http(s) and mailto links, paths
#      under runs/ or build/ or /tmp (outputs), and placeholders: a path with an upper-case
#      component (tests/fixtures/check/NAME.txt, RUN_DIR/train.csv, STUDY/prereg.txt), a glob
#      (data/*.txt) or braces (select_{grpo,lambda}.txt).
#   b. no "issue" followed by a number, in either case, in README.md, notes/, grpo.c, tests/,
#      Makefile or data/: the docs say what the work was, not which ticket it came from.
#   c. README.md has at most 400 lines.
#   d. the "Reading grpo.c" table of README.md matches grpo.c. A section of grpo.c starts at a
#      rule line (// followed by ten or more - or =) whose next line is the banner
#      "// <Name>" followed by ":", " (", " -", " —" or the end of the line. A row's range a–b
#      runs from the line number of that rule line to the line before the rule line of the
#      next section the table names (in file order); the last one runs to the end of grpo.c.
#      Every row's section must exist, once. Failures print the range grpo.c has.
#   e. a bare `make` builds ./grpo (the Makefile's default goal; needs make).
# Prints one PASS/FAIL line per check (with the details of a failure under it) and ends with
# `N passed, N failed`; exit status 1 on any failure. Needs sh, awk, grep, and git for the
# list of the repository's files (without git: any file that exists counts).
set -u
cd "$(dirname "$0")/.." || exit 1
passed=0; failed=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/grpo_docs.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

# report OUTPUT_FILE: prints the PASS/FAIL lines in it (and their detail lines), counts them
report() {
  cat "$1"
  p=$(grep -c '^PASS' "$1"); f=$(grep -c '^FAIL' "$1")
  passed=$((passed + p)); failed=$((failed + f))
}

# ---- a. links and paths
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git ls-files --cached --others --exclude-standard > "$tmp/files"
else
  find . -type f | sed 's|^\./||' > "$tmp/files"
fi
awk '
function trim_path(p) {            # a sentence may end right after a path
  while (p ~ /[.,:;]$/) p = substr(p, 1, length(p) - 1)
  return p
}
function normalize(p,    n, parts, out, m, i) {   # a/./b/../c -> a/c; "" if it leaves the repo
  n = split(p, parts, "/"); m = 0
  for (i = 1; i <= n; i++) {
    if (parts[i] == "" || parts[i] == ".") continue
    if (parts[i] == "..") { if (m == 0) return ""; m--; continue }
    out[++m] = parts[i]
  }
  p = ""
  for (i = 1; i <= m; i++) p = p (i > 1 ? "/" : "") out[i]
  return p
}
function dirname(f) { return (f ~ /\//) ? substr(f, 1, match(f, /\/[^\/]*$/) - 1) : "" }
function placeholder(p) {          # NAME, RUN_DIR, STUDY, P, D: upper-case components; globs
  return (p ~ /(^|\/)[A-Z][A-Z0-9_]*(\.[A-Za-z0-9]+)?(\/|$)/ || p ~ /[*{}<>]/ || p ~ /\.\.\.$/)
}
function output(p) { return (p ~ /^(runs|build)(\/|$)/ || p ~ /^\/tmp(\/|$)/) }
function slug(h, keep_utf8,    s, i, c, out) {   # GitHub: lower case, punctuation dropped, - for space
  s = tolower(h); out = ""
  for (i = 1; i <= length(s); i++) {
    c = substr(s, i, 1)
    if (c ~ /[a-z0-9_-]/) out = out c
    else if (c == " ") out = out "-"
    else if (keep_utf8 && c > "~") out = out c
  }
  return out
}
function has_anchor(file, a,    line, h, found) {
  if (!(file in anchors_read)) {
    anchors_read[file] = 1
    while ((getline line < file) > 0) {
      if (line ~ /^```/) fence = !fence
      if (fence || line !~ /^#+ /) continue
      h = line; sub(/^#+ +/, "", h); sub(/ +#* *$/, "", h)
      anchor[file, slug(h, 0)] = 1; anchor[file, slug(h, 1)] = 1
    }
    close(file); fence = 0
  }
  return ((file, a) in anchor)
}
function bad(what) { nbad[src]++; detail[src] = detail[src] sprintf("      %s:%d: %s\n", src, FNR, what) }
function check_target(t, rel,    path, a, full) {   # rel: 1 relative to the file, 0 to the root
  a = ""
  if (index(t, "#")) { a = substr(t, index(t, "#") + 1); t = substr(t, 1, index(t, "#") - 1) }
  if (t == "") full = src
  else {
    if (output(t) || placeholder(t)) return
    full = normalize((rel && dirname(src) != "") ? dirname(src) "/" t : t)
    if (full == "") { bad(t ": outside the repository"); return }
    if (output(full)) return
  }
  nref[src]++
  if (!(full in present)) { bad((a != "" ? t "#" a : t) ": no such file in the repository"); return }
  if (a != "" && full ~ /\.md$/ && !has_anchor(full, a)) bad(t "#" a ": no heading with that anchor in " full)
}
FILENAME == ARGV[1] {               # the repository file list
  present[$0] = 1; base[$0] = 1
  n = split($0, parts, "/"); d = ""
  for (i = 1; i < n; i++) { d = d (i > 1 ? "/" : "") parts[i]; present[d] = 1 }
  sub(/.*\//, "", $0); basename_of[$0] = 1
  next
}
FNR == 1 { src = FILENAME; sub(/^\.\//, "", src); order[++nsrc] = src; nref[src] += 0; infence = 0 }
{
  line = $0
  is_md = (src ~ /\.md$/)
  if (is_md && line ~ /^[ \t]*```/) { infence = !infence; next }
  if (is_md && !infence) {         # [text](target)
    s = line
    while (match(s, /\]\([^) \t]+\)/)) {
      t = substr(s, RSTART + 2, RLENGTH - 3); s = substr(s, RSTART + RLENGTH)
      if (t ~ /^(https?|mailto|ftp):/) continue
      check_target(t, 1)
    }
    gsub(/\]\([^) \t]+\)/, "]", line)   # link targets are not checked again as paths
  }
  # paths in prose, code and comments: tokens of path characters
  n = split(line, tok, /[^A-Za-z0-9_.\/*{}<>~-]+/)
  first = 1
  for (i = 1; i <= n; i++) {
    t = trim_path(tok[i])
    if (t == "") continue
    if (first && prev_last ~ /[A-Za-z]-$/ && t ~ /^[A-Za-z0-9_-]+\.md$/) t = prev_last t   # credit-\n assignment.md
    first = 0
    if (t ~ /^(\.\.\/)+[A-Za-z0-9_.-]/) { check_target(t, 1); continue }
    if (t ~ /^(notes|tests|data|\.ci)\/[A-Za-z0-9_.\/*{}<>-]*\.(md|sh|py|txt|c|h|cu|png|csv|bin|expected|json)$/) {
      check_target(t, 0); continue
    }
    if (t ~ /^[A-Za-z0-9_-]+\.md$/) {   # a bare note name: some file must be called that
      nref[src]++
      if (!(t in basename_of)) bad(t ": no file of that name in the repository")
    }
  }
  prev_last = ""
  for (i = n; i >= 1; i--) if (tok[i] != "") { prev_last = tok[i]; break }
}
END {
  for (k = 1; k <= nsrc; k++) {
    f = order[k]
    if (nbad[f]) printf "FAIL  a. links and paths in %-28s %d of %d do not resolve\n%s", f, nbad[f], nref[f], detail[f]
    else printf "PASS  a. links and paths in %-28s %d resolve\n", f, nref[f]
  }
}' "$tmp/files" README.md notes/*.md grpo.c > "$tmp/a"
report "$tmp/a"

# ---- b. no ticket numbers
: > "$tmp/b"
for scope in README.md notes grpo.c tests Makefile data; do
  grep -rInE '(^|[^A-Za-z])[Ii]ssue [0-9]' "$scope" > "$tmp/b_hits" 2>/dev/null
  if [ -s "$tmp/b_hits" ]; then
    printf 'FAIL  b. no "issue N" in %-29s %d lines\n' "$scope" "$(wc -l < "$tmp/b_hits" | tr -d ' ')" >> "$tmp/b"
    cut -c1-150 "$tmp/b_hits" | sed 's/^/      /' >> "$tmp/b"
  else
    printf 'PASS  b. no "issue N" in %s\n' "$scope" >> "$tmp/b"
  fi
done
report "$tmp/b"

# ---- c. README length
n=$(wc -l < README.md | tr -d ' ')
if [ "$n" -le 400 ]; then echo "PASS  c. README.md has at most 400 lines                 $n" > "$tmp/c"
else echo "FAIL  c. README.md has at most 400 lines                 it has $n" > "$tmp/c"; fi
report "$tmp/c"

# ---- d. the Reading grpo.c table against grpo.c's sections
awk '
FILENAME == "README.md" {
  if ($0 ~ /^## /) intable = ($0 ~ /^## Reading grpo\.c/)
  if (!intable || $0 !~ /^\|/ || $0 ~ /^\|[-| ]*$/) next
  n = split($0, cell, "|"); name = cell[2]; range = cell[3]
  gsub(/^ +| +$/, "", name); gsub(/ /, "", range)
  if (name == "section") next        # the header row
  gsub(/–/, "-", range)
  rows++; row_name[rows] = name; row_range[rows] = range
  next
}
{ line[FNR] = $0; total = FNR }
END {
  if (rows == 0) { print "FAIL  d. README.md has a \"Reading grpo.c\" table            no rows found"; exit }
  for (i = 2; i <= total; i++) {
    if (line[i - 1] !~ /^\/\/ *(----------+|==========+) *$/) continue   # mawk: no {10,}
    for (r = 1; r <= rows; r++) {
      b = "// " row_name[r]
      if (substr(line[i], 1, length(b)) != b) continue
      rest = substr(line[i], length(b) + 1)
      if (rest == "" || rest ~ /^(:| \(| -| —)/) { hits[r]++; start[r] = i - 1 }
    }
  }
  # ends: the line before the next named section (in file order), or the last line
  for (r = 1; r <= rows; r++) {
    if (hits[r] != 1) continue
    end[r] = total
    for (q = 1; q <= rows; q++) if (hits[q] == 1 && start[q] > start[r] && start[q] - 1 < end[r]) end[r] = start[q] - 1
  }
  for (r = 1; r <= rows; r++) {
    what = sprintf("%-28s", row_name[r])
    if (hits[r] == 0) {
      printf "FAIL  d. Reading grpo.c: %s no banner \"// %s: ...\" after a // ---- rule in grpo.c (table says %s)\n", what, row_name[r], row_range[r]
      continue
    }
    if (hits[r] > 1) { printf "FAIL  d. Reading grpo.c: %s %d banners in grpo.c, want one\n", what, hits[r]; continue }
    found = start[r] "-" end[r]
    shown = start[r] "–" end[r]
    if (row_range[r] == found) printf "PASS  d. Reading grpo.c: %s %s\n", what, shown
    else printf "FAIL  d. Reading grpo.c: %s table says %s, grpo.c has %s\n", what, row_range[r], shown
    if (r > 1 && hits[r - 1] == 1 && start[r - 1] > start[r])
      printf "      (the table lists %s after %s; grpo.c has it before)\n", row_name[r], row_name[r - 1]
  }
}' README.md grpo.c > "$tmp/d"
report "$tmp/d"

# ---- e. a bare `make` (README: "`make` builds ./grpo") builds ./grpo: the default goal, dry run,
# every target remade, compiles grpo.c into grpo (a target written above `all:` would take its place)
if command -v make >/dev/null 2>&1; then
  if make -n -B 2>/dev/null | grep -q -- ' grpo\.c -o grpo '; then
    echo "PASS  e. a bare make builds ./grpo (the Makefile's default goal)" > "$tmp/e"
  else
    { echo "FAIL  e. a bare make does not build ./grpo: its default goal is $(make -n -p 2>/dev/null | sed -n 's/^\.DEFAULT_GOAL := //p' | head -1)"; } > "$tmp/e"
  fi
  report "$tmp/e"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
