#!/bin/sh
# tests/isa.sh portable|wide: the code-generation flags of the test suite's two extra builds
# (make test builds tests/test_grpo_portable and tests/test_grpo_wide with them and runs the
# float-sensitive test groups in both). A float32 result depends on the instructions the
# compiler picks: the vector width sets the order of a sum's terms, and FMA contraction
# rounds a·b + c once instead of twice. The suite's tolerances must hold at both ends:
#   portable  -march=x86-64 -ffp-contract=off: SSE2 and no FMA, what every x86-64 CPU runs,
#             and no contraction (which matters on other architectures, whose default target
#             may have FMA; there this flag alone)
#   wide      the first of x86-64-v4 (AVX-512, 512-bit vectors preferred), x86-64-v3 (AVX2,
#             FMA) and x86-64-v2 (SSE4.2) that the compiler accepts and this CPU runs (a probe
#             built with that -march asks the CPU for the features); on other architectures
#             -march=native. A binary built for AVX-512 stops with SIGILL on a CPU without it,
#             so the CPU decides, not only the compiler.
# Prints the flags on one line. Environment: CC (cc).
set -u
CC=${CC:-cc}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/grpo_isa.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
accepts() { printf 'int main(void){return 0;}' | $CC "$@" -x c - -o "$tmp/a" > /dev/null 2>&1; }

x86=0
accepts -march=x86-64 && x86=1
case ${1:-} in
  portable)
    if [ $x86 = 1 ]; then echo "-march=x86-64 -ffp-contract=off"; else echo "-ffp-contract=off"; fi ;;
  wide)
    if [ $x86 = 0 ]; then
      if accepts -march=native; then echo "-march=native"; else echo ""; fi
      exit 0
    fi
    for level in v4 v3 v2; do
      case $level in
        v4) features="avx512f avx512bw avx512cd avx512dq avx512vl avx2 fma bmi bmi2"
            extra="-mprefer-vector-width=512" ;;
        v3) features="avx2 avx fma bmi bmi2"; extra="" ;;
        v2) features="sse4.2 popcnt"; extra="" ;;
      esac
      cond=1
      for f in $features; do cond="$cond && __builtin_cpu_supports(\"$f\")"; done
      printf 'int main(void) {\n    __builtin_cpu_init();\n    return !(%s);\n}\n' "$cond" > "$tmp/probe.c"
      # a CPU without the features makes the probe return 1 (or die of SIGILL): next level
      if $CC -march=x86-64-$level $extra "$tmp/probe.c" -o "$tmp/probe" > /dev/null 2>&1 &&
         "$tmp/probe" 2> /dev/null; then
        echo "-march=x86-64-$level $extra" | sed 's/ *$//'
        exit 0
      fi
    done
    echo "-march=x86-64" ;;
  *)
    echo "usage: sh tests/isa.sh portable|wide" >&2
    exit 2 ;;
esac
