#!/usr/bin/env bash
# tests/fuzz/run.sh [SECONDS] [HARNESS...]: runs each libFuzzer harness (default: all four,
# one after another, each at nice 19) for SECONDS (default 600) and prints a summary table.
#   - fuzzes into a scratch corpus tests/fuzz/work/<h>/corpus seeded from tests/fuzz/corpus/<h>
#     (the committed corpus is not touched unless FZ_MERGE=1: then the scratch corpus is
#     minimised into it with -merge=1 at the end; merge with the build of the real grpo.c,
#     not a patched copy, so that the corpus holds no input that crashes it);
#   - when libFuzzer stops at a finding before the time is up, the finding is kept in
#     tests/fuzz/work/<h>/artifacts/ and fuzzing restarts for the rest of the time;
#   - findings: crash-*, leak-*, timeout-*, oom-* files written during this run; distinct:
#     different first report lines (each is listed under the table).
# Build first: tests/fuzz/build.sh. Env: FZ_JOBS (harnesses at once, default 1),
# FZ_EXTRA (more libFuzzer flags), FZ_BIN (directory of the binaries, default tests/fuzz/bin).
set -uo pipefail
cd "$(dirname "$0")"
SECS=${1:-600}; shift || true
HARNESSES=("$@"); [ ${#HARNESSES[@]} -eq 0 ] && HARNESSES=(dataset check checkpoint verify)
BIN=${FZ_BIN:-bin}
declare -A MAXLEN=([dataset]=8192 [check]=8192 [checkpoint]=16384 [verify]=4096)
declare -A MERGE_MAXLEN=([dataset]=8192 [check]=4096 [checkpoint]=16384 [verify]=4096)   # keeps corpus/check < 200 KB

run_one() {   # harness -> writes work/<h>/summary
  local h=$1 w=work/$1 end=$(( $(date +%s) + SECS )) execs=0 cov=0 ft=0 segs=0
  mkdir -p "$w/corpus" "$w/artifacts" "$w/logs"
  cp -n corpus/"$h"/* "$w/corpus/" 2>/dev/null || true
  local before; before=$(ls "$w/artifacts" | wc -l)
  while :; do
    local left=$(( end - $(date +%s) ))
    [ "$left" -lt 2 ] && break
    segs=$((segs + 1))
    local log="$w/logs/seg$segs.log"
    nice -n 19 "$BIN/fuzz_$h" -max_total_time="$left" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 \
      -max_len="${MAXLEN[$h]}" -dict=dict/"$h".dict -print_final_stats=1 -detect_leaks=1 \
      -artifact_prefix="$w/artifacts/" ${FZ_EXTRA:-} "$w/corpus" > "$log" 2>&1
    local e c f
    e=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$')
    # without final stats (a crash): the last status line's #count
    [ -z "$e" ] && e=$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#')
    execs=$(( execs + ${e:-0} ))
    c=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*'); [ -n "$c" ] && [ "$c" -gt "$cov" ] && cov=$c
    f=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*'); [ -n "$f" ] && [ "$f" -gt "$ft" ] && ft=$f
    grep -q 'Done [0-9]* runs in' "$log" && break   # reached the time limit
    grep -q 'ERROR: libFuzzer\|ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error\|fz oracle\|fz: success path' "$log" || break
  done
  local now; now=$(ls "$w/artifacts" | wc -l)
  local findings=$(( now - before ))
  local kinds; kinds=$(ls -t "$w/artifacts" | head -n "$findings" | sed 's/-.*//' | sort | uniq -c | awk '{printf "%s%s x%d", (NR>1?", ":""), $2, $1}')
  # distinct findings: the first report line of each stopped segment, numbers and addresses masked
  grep -h -m1 'fz oracle:\|fz: success path\|ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|ERROR: libFuzzer\|runtime error:' \
      "$w"/logs/seg*.log 2>/dev/null | sed 's/==[0-9]*==//; s/0x[0-9a-f]*/ADDR/g; s/[0-9][0-9]*/N/g' | sort -u > "$w/signatures"
  local distinct; distinct=$(wc -l < "$w/signatures")
  [ "$findings" -eq 0 ] && distinct=0
  echo "$h $execs $cov $ft $findings $distinct ${kinds:-none}" > "$w/summary"
  if [ "${FZ_MERGE:-0}" = 1 ]; then
    mkdir -p "$w/merged"
    nice -n 19 "$BIN/fuzz_$h" -merge=1 -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 -max_len="${MERGE_MAXLEN[$h]}" \
      "$w/merged" corpus/"$h" "$w/corpus" > "$w/logs/merge.log" 2>&1
    rm -f corpus/"$h"/*; cp "$w/merged"/* corpus/"$h"/; rm -rf "$w/merged"
  fi
}

pids=()
for h in "${HARNESSES[@]}"; do
  [ -x "$BIN/fuzz_$h" ] || { echo "missing $BIN/fuzz_$h: run tests/fuzz/build.sh" >&2; exit 2; }
  rm -f work/"$h"/summary
  run_one "$h" & pids+=($!)
  while [ "$(jobs -rp | wc -l)" -ge "${FZ_JOBS:-1}" ]; do sleep 1; done
done
wait
printf '\n%-11s %12s %6s %7s %9s %9s  %s\n' harness execs cov ft findings distinct kinds
total=0
for h in "${HARNESSES[@]}"; do
  read -r name e c f n d k < work/"$h"/summary
  printf '%-11s %12s %6s %7s %9s %9s  %s\n' "$name" "$e" "$c" "$f" "$n" "$d" "$k"
  total=$(( total + n ))
done
for h in "${HARNESSES[@]}"; do
  [ -s work/"$h"/signatures ] && sed "s/^/  $h: /" work/"$h"/signatures
done
echo "artifacts: tests/fuzz/work/<harness>/artifacts/   logs: tests/fuzz/work/<harness>/logs/"
[ "$total" -eq 0 ]
