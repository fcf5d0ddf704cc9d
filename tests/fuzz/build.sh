#!/usr/bin/env bash
# tests/fuzz/build.sh: builds the libFuzzer harnesses into tests/fuzz/bin/ (clang >= 6).
#   tests/fuzz/build.sh                 harnesses against ./grpo.c
#   GRPO_SRC=/abs/path/copy.c tests/fuzz/build.sh   against another copy (e.g. with fixes)
# Env: CC (default clang), FUZZ_CFLAGS (extra flags), FZ_BIN (output directory relative to
# tests/fuzz, default bin). Run from anywhere.
set -euo pipefail
cd "$(dirname "$0")"
CC=${CC:-clang}
OUT=${FZ_BIN:-bin}
mkdir -p "$OUT"
SRC_DEF=()
if [ -n "${GRPO_SRC:-}" ]; then SRC_DEF=(-DFZ_GRPO_SRC="\"$GRPO_SRC\""); fi
FLAGS=(-g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -Wall -Wextra -Wno-unused-function -Wno-unknown-pragmas ${FUZZ_CFLAGS:-})
for h in dataset check checkpoint verify; do
  echo "build: $OUT/fuzz_$h${GRPO_SRC:+ (grpo.c = $GRPO_SRC)}"
  "$CC" "${FLAGS[@]}" "${SRC_DEF[@]}" fuzz_$h.c -o "$OUT"/fuzz_$h -lm
done
# the seed generator for checkpoints (plain build, no libFuzzer)
"$CC" -O1 -g -Wall -Wno-unused-function -Wno-unknown-pragmas "${SRC_DEF[@]}" make_seeds.c -o "$OUT"/make_seeds -lm
# the replay driver (the test-suite path, no clang features needed)
"$CC" -O1 -g -Wall -Wextra -Wno-unused-function -Wno-unknown-pragmas "${SRC_DEF[@]}" replay_driver.c -o "$OUT"/replay_driver -lm
echo "build: done"
