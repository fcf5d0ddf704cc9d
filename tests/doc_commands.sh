#!/bin/sh
# tests/doc_commands.sh: the command sequences of the docs run as written, in order, from a fresh
# checkout (part of make test). Each sequence runs in a new directory that holds ./grpo and links to
# data/ and notes/, so that its runs/ starts empty, as in a fresh clone:
#   - README.md's tour (its `$ ./grpo ...` lines and the ./grpo lines of its code blocks, up to
#     "## Commands"), then
#   - notes/chain-sum.md's SFT table and its three train lines.
# Fewer steps where a flag allows: every --steps N becomes --steps 2, tree and train get --steps 2
# when they give none, eval and train score --eval-limit/--test-limit 20 problems. Nothing else is
# changed: a command that is refused (a finished run in its --run-dir, a file that an earlier
# command did not make) fails the test. One PASS/FAIL line per command, then `N passed, N failed`.
set -u
cd "$(dirname "$0")/.." || exit 1
G=${GRPO_BIN:-./grpo}
[ -x "$G" ] || { echo "FAIL  docs: '$G' is not built (make grpo)"; echo "0 passed, 1 failed"; exit 1; }
G=$(cd "$(dirname "$G")" && pwd)/$(basename "$G")
root=$(pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/grpo_doc.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
passed=0; failed=0

# the README's tour: `$ ./grpo` lines, and ./grpo lines (with their \ continuations) in code blocks
readme_tour() {
  awk '/^## A short tour/ {on = 1; next} /^## / && on {exit}
       on && /^```/ {code = !code; next}
       on && code && /^\$ \.\/grpo / {sub(/^\$ /, ""); print; next}
       on && code && (/^\.\/grpo / || cont) {line = line $0; cont = /\\$/; if (cont) {sub(/\\$/, "", line); next} print line; line = ""}' README.md
}
# notes/chain-sum.md: the SFT commands of its table (in backticks), then its block of train lines
chain_sum() {
  grep -o '`\./grpo sft --task chain-sum[^`]*`' notes/chain-sum.md | tr -d '`'
  awk '/^```/ {code = !code; next} code && /^\.\/grpo train --task chain-sum/ {print}' notes/chain-sum.md
}

shorten() {
  awk '{
    if ($0 ~ / --steps [0-9]+/) gsub(/ --steps [0-9]+/, " --steps 2")
    else if ($0 ~ /^\.\/grpo (tree|train) /) $0 = $0 " --steps 2"
    gsub(/ --test-limit [0-9]+/, " --test-limit 20")
    if ($0 ~ /^\.\/grpo train /) $0 = $0 (index($0, "--test-limit") ? "" : " --test-limit 20") " --eval-limit 20"
    if ($0 ~ /^\.\/grpo eval /) $0 = $0 " --eval-limit 20"
    print }'
}

run_sequence() {   # NAME, the commands on standard input
  name=$1
  dir="$tmp/$name"
  mkdir -p "$dir" && cp "$G" "$dir/grpo" && ln -s "$root/data" "$dir/data" && ln -s "$root/notes" "$dir/notes"
  n=0
  while IFS= read -r line; do
    n=$((n + 1))
    short=$(printf '%s\n' "$line" | shorten)
    if (cd "$dir" && sh -c "$short") > "$dir/out.$n" 2>&1; then
      echo "PASS  docs: $name command $n runs as written: $(printf '%.90s' "$line")"; passed=$((passed + 1))
    else
      echo "FAIL  docs: $name command $n runs as written: $line"; sed 's/^/    /' "$dir/out.$n" | tail -5
      echo "    (run as: $short)"; failed=$((failed + 1))
    fi
  done
  [ "$n" -gt 0 ] || { echo "FAIL  docs: $name: no command found"; failed=$((failed + 1)); }
}

readme_tour > "$tmp/readme.txt"
chain_sum > "$tmp/chain_sum.txt"
run_sequence readme < "$tmp/readme.txt"
run_sequence chain-sum < "$tmp/chain_sum.txt"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
