#!/usr/bin/env bash
# tests/fuzz/build.sh: builds the libFuzzer harnesses into tests/fuzz/bin/ (clang >= 6).
#   tests/fuzz/build.sh                 harnesses against ./grpo.c
#   GRPO_SRC=/abs/path/copy.c tests/fuzz/build.sh   against another copy (e.g. with fixes)
# Env: CC (default clang), FUZZ_CFLAGS (extra flags). Run from anywhere.
set -euo pipefail
cd "$(dirname "$0")"
CC=${CC:-clang}
mkdir -p bin
SRC_DEF=()
if [ -n "${GRPO_SRC:-}" ]; then SRC_DEF=(-DFZ_GRPO_SRC="\"$GRPO_SRC\""); fi
FLAGS=(-g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -Wall -Wextra -Wno-unused-function -Wno-unknown-pragmas ${FUZZ_CFLAGS:-})
for h in dataset check checkpoint verify; do
  echo "build: bin/fuzz_$h${GRPO_SRC:+ (grpo.c = $GRPO_SRC)}"
  "$CC" "${FLAGS[@]}" "${SRC_DEF[@]}" fuzz_$h.c -o bin/fuzz_$h -lm
done
# the seed generator for checkpoints (plain build, no libFuzzer)
"$CC" -O1 -g -Wall -Wno-unused-function -Wno-unknown-pragmas "${SRC_DEF[@]}" make_seeds.c -o bin/make_seeds -lm
# the replay driver (the test-suite path, no clang features needed)
"$CC" -O1 -g -Wall -Wextra -Wno-unused-function -Wno-unknown-pragmas "${SRC_DEF[@]}" replay_driver.c -o bin/replay_driver -lm
echo "build: done"
