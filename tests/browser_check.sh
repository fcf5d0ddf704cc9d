#!/usr/bin/env bash
# tests/browser_check.sh [--out DIR]: the --html page of B(G) in a real browser (make test-browser).
# Renders, with headless Chromium, the paper's worked example (./grpo check --html) and a live
# countdown group of 16 (./grpo sample --html), each under #grpo and #lambda-grpo, and a group of
# 64 with long completions (./grpo sample --group-size 64 --max-new-tokens 50), and checks:
#   - the page's script ran to its end (it writes data-status="ok" on <body>, read back with
#     --dump-dom) and the browser logged no console message (the page logs only on an error);
#   - every drawn node carries its hover text (an SVG <title>: its members, their a_i, the sums);
#   - the URL's hash chose the objective (data-objective) and the colours change with it:
#     the two screenshots differ in pixels (ImageMagick's compare -metric AE), while the same
#     objective rendered twice gives the same pixels (so the difference is the switch's);
#   - the k = 64 pages are under 1 MB. Sizes and the draw times the page measured
#     (performance.now(), data-draw-ms) are printed, not checked.
# Then make web's page (grpo.c in WebAssembly, notes/web), under 2 MB, through
# notes/web/test_page.js: a small Table 1 grid against the same WebAssembly under node, bit for
# bit (and in Firefox, where it is installed); a typed worked example against native ./grpo check;
# nothing fetched (its screenshot: web_page.png). Without emcc (Debian: apt-get install
# emscripten) that part is SKIPPED, and the summary line says so.
# The countdown model: $GRPO_HTML_MODEL, else runs/sft/model.bin, else a small SFT model made
# here (~1 min). The screenshots go to a temporary directory, or to DIR with --out (`--out
# notes/figures` refreshes the committed figures). Without chromium it prints a SKIPPED line and
# exits 0; ./grpo must be built (make grpo). Exit status 1 when a check fails.
set -u
cd "$(dirname "$0")/.."
out=""
if [ "${1:-}" = "--out" ]; then out=${2:?--out needs a directory}; fi
browser=""
for b in chromium chromium-browser google-chrome; do command -v "$b" >/dev/null 2>&1 && { browser=$b; break; }; done
if [ -z "$browser" ]; then
  echo "browser_check: SKIPPED, not passed: no chromium (Debian: apt-get install chromium)"
  exit 0
fi
if ! command -v compare >/dev/null 2>&1; then
  echo "browser_check: SKIPPED, not passed: no ImageMagick compare (Debian: apt-get install imagemagick)"
  exit 0
fi
[ -x ./grpo ] || { echo "browser_check: ./grpo not built (make grpo)"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/grpo-browser.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
shots=${out:-$tmp}
mkdir -p "$shots"
pass=0; fail=0
ok() { echo "PASS  $1"; pass=$((pass + 1)); }
bad() { echo "FAIL  $1"; fail=$((fail + 1)); }
# headless Chromium: its own profile directory, no sandbox (CI runs as root); the virtual time
# budget lets the page's script finish before the DOM is dumped or the screenshot taken
chrome() { "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$tmp/profile" \
             --enable-logging=stderr --v=0 --virtual-time-budget=5000 "$@"; }

model=${GRPO_HTML_MODEL:-runs/sft/model.bin}
if [ ! -f "$model" ]; then
  echo "browser_check: no $model: a small SFT model first (./grpo sft --layers 2 --steps 2000)"
  ./grpo sft --layers 2 --steps 2000 --lr 4e-3 --eval-every 0 --run-dir "$tmp/sft" > "$tmp/sft.log" 2>&1 ||
    { cat "$tmp/sft.log"; echo "browser_check: sft failed"; exit 1; }
  model=$tmp/sft/model.bin
fi
./grpo check --objective grpo --adv-eps 0 --token-names notes/examples/letters.txt \
  --html "$tmp/worked_example.html" notes/examples/worked_example.txt > /dev/null 2>&1 || bad "check --html"
./grpo sample --threads 1 --model "$model" --prompt '6 5 3 3>1:' --group-size 16 --temperature 0.8 --mc-k 4 \
  --html "$tmp/countdown16.html" > "$tmp/countdown16.txt" 2>&1 || bad "sample --html (k=16)"
./grpo sample --threads 1 --model "$model" --prompt '6 5 3 3>1:' --group-size 64 --temperature 1.5 \
  --max-new-tokens 50 --mc-k 1 --html "$tmp/countdown64.html" > /dev/null 2>&1 || bad "sample --html (k=64)"

# A batch of 64 long completions in check's format (800 tokens each: a binary split every 100
# tokens down to 64 leaves, every 8th completion ending at token 350, inside its path, so that
# chains of single-child nodes appear and are drawn as runs); rewards 1 for every third.
awk 'BEGIN { for (i = 0; i < 64; i++) { n = i % 8 == 0 ? 350 : 800; s = ""
  for (t = 0; t < n; t++) { d = int(t / 100); tok = d < 7 ? int(i / 2 ^ (6 - d)) + 3 * d : (i * 7 + t) % 50
                            s = s (t ? "," : "") tok }
  printf "group=0 reward=%d tokens=%s\n", i % 3 == 0, s } }' > "$tmp/long64.txt"
./grpo check --html "$tmp/check64.html" "$tmp/long64.txt" > /dev/null 2>&1 || bad "check --html (k=64, 800 tokens)"

# render PAGE HASH NAME [DIR]: dumps the DOM (NAME.dom, its console in NAME.log), checks the marker
# and the objective, then takes DIR/NAME.png (default: the screenshot directory) at the size of
# the drawing
render() {
  local page=$1 hash=$2 name=$3 dir=${4:-$shots}
  chrome --dump-dom "file://$page#$hash" > "$tmp/$name.dom" 2> "$tmp/$name.log"
  local body; body=$(grep -o '<body[^>]*>' "$tmp/$name.dom" | head -1)
  local console; console=$(grep -c ':CONSOLE' "$tmp/$name.log")
  if [[ $body == *'data-status="ok"'* && $body == *"data-objective=\"$hash\""* && $console -eq 0 ]]; then
    ok "$name: drawn, objective $hash from the URL, no console message"
  else
    bad "$name: body '$body', $console console messages:"; grep ':CONSOLE' "$tmp/$name.log" | head -5
  fi
  # the hover text: each drawn node's <title> lists its members and the sums behind the colour
  local titles members
  titles=$(grep -c '<title>step "' "$tmp/$name.dom"); members=$(grep -c '^  members: y[0-9]' "$tmp/$name.dom")
  if [ "$titles" -gt 0 ] && [ "$members" -ge "$titles" ] && grep -q '^  λ-GRPO: Σ a_i/[0-9]* = ' "$tmp/$name.dom"; then
    ok "$name: hover texts ($titles) name each step's members and the sums behind the colour"
  else bad "$name: $titles hover texts, $members member lines"; fi
  local ms; ms=$(sed -n 's/.*data-draw-ms="\([0-9.]*\)".*/\1/p' "$tmp/$name.dom" | head -1)
  local w h
  w=$(sed -n 's/.*<svg id="bg-svg"[^>]* width="\([0-9]*\)".*/\1/p' "$tmp/$name.dom" | head -1)
  h=$(sed -n 's/.*<svg id="bg-svg"[^>]* height="\([0-9]*\)".*/\1/p' "$tmp/$name.dom" | head -1)
  w=$(( ${w:-800} + 40 )); [ "$w" -lt 1000 ] && w=1000
  h=$(( ${h:-400} + 230 ))
  local finished; finished=$(sed -n 's/.*data-done-ms="\([0-9.]*\)".*/\1/p' "$tmp/$name.dom" | head -1)
  chrome --window-size="$w,$h" --screenshot="$dir/$name.png" "file://$page#$hash" > /dev/null 2>&1
  # a committed figure: recompressed losslessly when optipng is there (figures stay < 200 KB)
  if [ -n "$out" ] && [ "$dir" = "$shots" ] && command -v optipng > /dev/null 2>&1; then optipng -quiet -o2 "$dir/$name.png"; fi
  size="$w,$h"
  echo "      $name: script ${ms:-?} ms; drawn ${finished:-?} ms after loading began (performance.now);" \
       "page $(wc -c < "$page") bytes; screenshot ${w}x$h, $(wc -c < "$dir/$name.png" 2>/dev/null || echo 0) bytes"
  eval "ms_$(echo "$name" | tr -c 'a-z0-9\n' _)=${finished:-99999}"
}

# pixels: the number of pixels that differ between two screenshots
pixels() { compare -metric AE "$1" "$2" null: 2>&1 | sed 's/ .*//'; }
for base in bg_worked_example bg_countdown16; do
  render "$tmp/${base#bg_}.html" lambda-grpo "${base}_lambda-grpo"
  render "$tmp/${base#bg_}.html" grpo "${base}_grpo"
  cp "$shots/${base}_grpo.png" "$tmp/${base}_first.png"
  chrome --window-size="$size" --screenshot="$tmp/${base}_again.png" "file://$tmp/${base#bg_}.html#grpo" > /dev/null 2>&1
  same=$(pixels "$tmp/${base}_first.png" "$tmp/${base}_again.png")
  diff=$(pixels "$shots/${base}_grpo.png" "$shots/${base}_lambda-grpo.png")
  if [ "$same" = "0" ]; then ok "$base: #grpo rendered twice: the same pixels"; else bad "$base: #grpo twice differs in '$same' pixels"; fi
  if [ -n "$diff" ] && [ "$diff" -gt 0 ] 2>/dev/null; then ok "$base: #grpo and #lambda-grpo differ in $diff pixels (the colours)"
  else bad "$base: #grpo and #lambda-grpo differ in '$diff' pixels"; fi
done
render "$tmp/countdown64.html" lambda-grpo countdown64_lambda-grpo "$tmp"
render "$tmp/check64.html" grpo check64_grpo "$tmp"
if grep -q 'run of [0-9]* steps' "$tmp/check64_grpo.dom"; then ok "check64: chains of single-child nodes drawn as runs"
else bad "check64: no run drawn"; fi
# the draw times, printed, not checked (speed is for benchmarks: a shared machine's time is noise)
echo "      draw times after loading began: worked example $ms_bg_worked_example_grpo ms, countdown k=16 \
$ms_bg_countdown16_grpo ms, k=64 $ms_countdown64_lambda_grpo ms, check k=64 $ms_check64_grpo ms"
for p in countdown64 check64; do
  bytes=$(wc -c < "$tmp/$p.html")
  if [ "$bytes" -lt 1000000 ]; then ok "$p page: $bytes bytes, under 1 MB"; else bad "$p page: $bytes bytes"; fi
done

# make web's page: built here (its build time printed), then test_page.js's checks
skipped=""
if ! command -v emcc > /dev/null 2>&1 || ! command -v node > /dev/null 2>&1; then
  skipped=", SKIPPED: the WebAssembly page (no emcc or node; Debian: apt-get install emscripten)"
else
  t=$(date +%s)
  if make --no-print-directory web > "$tmp/web.log" 2>&1; then
    bytes=$(wc -c < build/web/grpo.html)
    if [ "$bytes" -le 2000000 ]; then
      ok "make web: build/web/grpo.html, $bytes bytes (at most 2 MB), built in $(( $(date +%s) - t )) s"
    else bad "make web: build/web/grpo.html is $bytes bytes, over 2 MB"; fi
    # and in Firefox too where it is installed (CI: not installed)
    firefox=$(command -v firefox-esr || command -v firefox)
    node notes/web/test_page.js build/web/grpo.html "$browser" ./grpo "$shots/web_page.png" ${out:+--figure} \
      ${firefox:+--firefox "$firefox"} > "$tmp/web.txt" 2>&1
    grep -v '^web page: ' "$tmp/web.txt"
    # a committed figure: 256 colours (ImageMagick, as compare above), a third of the bytes
    if [ -n "$out" ]; then convert "$shots/web_page.png" -colors 256 "PNG8:$shots/web_page.png"; fi
    pass=$((pass + $(grep -c '^PASS' "$tmp/web.txt"))); fail=$((fail + $(grep -c '^FAIL' "$tmp/web.txt")))
    grep -q '^web page: ' "$tmp/web.txt" || bad "notes/web/test_page.js ended without its summary"
  else
    tail -20 "$tmp/web.log"; bad "make web failed"
  fi
fi
echo "browser_check: $pass passed, $fail failed$skipped"
[ "$fail" -eq 0 ]
