# grpo.c: build, test, run. `make` builds ./grpo (CPU, OpenMP when the compiler has it).
.DEFAULT_GOAL := all
CC      ?= cc
# -mprefer-vector-width=512 where the compiler takes it: with -march=native on an Intel AVX-512
# CPU gcc still vectorizes with 256-bit registers (its default there); the matmul tile is
# written for 512 (grpo.c, MM_W). No effect on a CPU without AVX-512.
VEC512  := $(shell printf 'int main(void){return 0;}' | $(CC) -march=native -mprefer-vector-width=512 -x c - -o /dev/null 2>/dev/null && echo -mprefer-vector-width=512)
CFLAGS  ?= -O3 -march=native $(VEC512) -fno-math-errno -Wall -Wextra -Wno-unused-function
LDLIBS  := -lm
NVCC    ?= nvcc
# OpenMP is used when the compiler accepts -fopenmp; the program is also correct without it.
OMP     := $(shell printf 'int main(void){return 0;}' | $(CC) -fopenmp -x c - -o /dev/null 2>/dev/null && echo -fopenmp)
HAVE_NVCC := $(shell command -v $(NVCC) 2>/dev/null)
# without OpenMP threads, the `omp simd` loops still vectorize with -fopenmp-simd (no runtime)
SIMD    := $(shell printf 'int main(void){return 0;}' | $(CC) -fopenmp-simd -x c - -o /dev/null 2>/dev/null && echo -fopenmp-simd)
NOOMP   := $(SIMD) -Wno-unknown-pragmas

# OpenMP's waiting threads (libgomp reads OMP_WAIT_POLICY before main): on an idle machine they
# spin (libgomp's default: 200 RL steps 2.2x and SFT 1.24x faster than sleeping); when other jobs
# hold a CPU they sleep (PASSIVE: spinning against them made a 2-thread run up to 20x slower).
# Chosen once, as make starts, from $(LOADAVG) by ./grpo's own busy test (busy_machine_warning):
# other jobs = min(1-minute load, runnable tasks - 1) >= 1. Measured: notes/speed.md. For make
# run and make compare (make test: PASSIVE); an OMP_WAIT_POLICY on the command line or in the
# environment wins. `make wait-policy` prints the choice.
LOADAVG ?= /proc/loadavg
ifeq ($(origin OMP_WAIT_POLICY),undefined)
TEST_WAIT_POLICY := PASSIVE
# LOAD_SAYS: PASSIVE (other jobs), spin (none), or empty (no load average read; an empty LOADAVG reads nothing)
LOAD_SAYS := $(if $(LOADAVG),$(shell awk 'NR == 1 { if (NF < 4 || $$4 !~ /\//) exit; split($$4, r, "/"); o = r[1] - 1; if ($$1 + 0 < o) o = $$1 + 0; print (o >= 1 ? "PASSIVE" : "spin"); exit }' $(LOADAVG) 2>/dev/null))
OMP_WAIT_POLICY := $(filter PASSIVE,$(LOAD_SAYS))
WAIT_WHY := $(if $(LOAD_SAYS),$(if $(OMP_WAIT_POLICY),other jobs seen in $(LOADAVG): threads sleep,no other jobs seen in $(LOADAVG): threads spin),could not read a load average from '$(LOADAVG)': threads spin)
else
TEST_WAIT_POLICY := $(OMP_WAIT_POLICY)
WAIT_WHY := $(if $(OMP_WAIT_POLICY),given,given empty: libgomp's default)
endif
ifneq ($(OMP_WAIT_POLICY),)
run compare: export OMP_WAIT_POLICY := $(OMP_WAIT_POLICY)
endif
# the test targets sleep always: the suite is itself the load, and its checks read exact stderr
test test-asan: export OMP_WAIT_POLICY := $(TEST_WAIT_POLICY)

.PHONY: all test test-asan bench bench-cuda run sft train cuda cuda-compile test-cuda clean figures assignment grade
.PHONY: compare test-browser wait-policy tree-sweep web

wait-policy:
	@echo "OMP_WAIT_POLICY=$(if $(OMP_WAIT_POLICY),$(OMP_WAIT_POLICY),(unset: libgomp's default, threads spin))"

# the line make run and make compare start with
WAIT_LINE = make: OMP_WAIT_POLICY=$(if $(OMP_WAIT_POLICY),$(OMP_WAIT_POLICY),unset) ($(WAIT_WHY); make wait-policy)

all: grpo

grpo: grpo.c
	@echo "make: OpenMP $(if $(OMP),on ($(OMP)),off: the compiler does not accept -fopenmp; building single-threaded)"
	$(CC) $(CFLAGS) $(if $(OMP),$(OMP),$(NOOMP)) grpo.c -o $@ $(LDLIBS)

tests/test_grpo: tests/test_grpo.c grpo.c tests/verifier_cases.h tests/test_check.c tests/test_html.c tests/test_claims.c tests/fuzz/replay.c tests/fuzz/fz_entry.h tests/ref_model.h
	$(CC) $(CFLAGS) $(OMP) tests/test_grpo.c -o $@ $(LDLIBS)

# the same suite built without OpenMP: the file must compile and run correctly single-threaded
tests/test_grpo_noomp: tests/test_grpo.c grpo.c tests/verifier_cases.h tests/test_check.c tests/test_html.c tests/test_claims.c tests/fuzz/replay.c tests/fuzz/fz_entry.h tests/ref_model.h
	$(CC) $(CFLAGS) $(NOOMP) tests/test_grpo.c -o $@ $(LDLIBS)

# The float-sensitive groups once more, built for both ends of the instruction sets (float32
# results depend on vector width and FMA contraction; the suite's tolerances must hold on any
# CPU): tests/isa.sh prints the flags. portable: -march=x86-64 -ffp-contract=off (SSE2, no
# FMA); wide: the widest vector ISA that the compiler and this CPU both support.
TEST_SRC   := tests/test_grpo.c grpo.c tests/verifier_cases.h tests/test_check.c tests/test_html.c tests/test_claims.c tests/fuzz/replay.c \
              tests/fuzz/fz_entry.h tests/ref_model.h
TEST_WARN  := -Wall -Wextra -Wno-unused-function
tests/test_grpo_portable: $(TEST_SRC) tests/isa.sh
	@isa=$$(CC="$(CC)" sh tests/isa.sh portable) && echo "make: $@: -O3 $$isa (portable)" && \
	  $(CC) -O3 $$isa $(TEST_WARN) $(OMP) tests/test_grpo.c -o $@ $(LDLIBS)

tests/test_grpo_wide: $(TEST_SRC) tests/isa.sh
	@isa=$$(CC="$(CC)" sh tests/isa.sh wide) && \
	  echo "make: $@: -O3 $$isa (the widest vector ISA this compiler and CPU support)" && \
	  $(CC) -O3 $$isa $(TEST_WARN) $(OMP) tests/test_grpo.c -o $@ $(LDLIBS)

# make test prints only PASS and FAIL lines (each failure's details under it) and last the
# summary `N passed, N failed` (CI reads it): the builds' output goes to build/test-build.log,
# shown when a build fails (tests/run_tests.sh). On a failure, GNU make would
# print its own "make: *** [Makefile:N: test] Error 1" after it, whatever the recipe does, so
# the recipe ends make with SIGPIPE instead, which no shell reports (exit status 141). Where
# make ignores SIGPIPE, and with --output-sync (make still holds the recipe's output then),
# `exit 1` fails the target the usual way.
STOP_MAKE = { $(if $(filter -O% --output-sync%,$(MAKEFLAGS)),,kill -PIPE $$PPID;) exit 1; }
TEST_BUILDS := grpo tests/test_grpo tests/test_grpo_noomp tests/test_grpo_portable tests/test_grpo_wide cuda-compile
test:
	@mkdir -p build; $(MAKE) --no-print-directory $(TEST_BUILDS) > build/test-build.log 2>&1; echo $$? > build/test-build.rc
	@bash tests/run_tests.sh build/test-build || $(STOP_MAKE)

# the whole suite under AddressSanitizer and UndefinedBehaviorSanitizer (single-threaded
# build: libgomp's thread pool is not instrumented and would hide nothing but add noise)
tests/test_grpo_asan: tests/test_grpo.c grpo.c tests/verifier_cases.h tests/test_check.c tests/test_html.c tests/test_claims.c tests/fuzz/replay.c tests/fuzz/fz_entry.h tests/ref_model.h
	$(CC) -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	  -Wall -Wextra -Wno-unused-function tests/test_grpo.c -o $@ $(LDLIBS)

grpo_asan: grpo.c
	$(CC) -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	  -Wall -Wextra -Wno-unused-function grpo.c -o $@ $(LDLIBS)

# (its last line is the summary too, as for make test)
test-asan: tests/test_grpo_asan grpo_asan
	@GRPO_BIN=./grpo_asan ASAN_OPTIONS=detect_leaks=0 ./tests/test_grpo_asan || $(STOP_MAKE)

# compile and link the CUDA build when nvcc is installed; make test then runs ./tests/test_cuda
# --quick (CI has nvcc but no GPU: the kernel test then runs nothing)
cuda-compile:
ifneq ($(HAVE_NVCC),)
	@$(MAKE) --no-print-directory grpo_cuda tests/test_cuda
else
	@echo "make: nvcc not found; CUDA build not compiled"
endif

cuda: grpo_cuda

# CUDA build. CUDA_ARCH names the GPU (empty: nvcc's default, machine code for an old arch
# plus PTX that the driver compiles for any newer GPU; tests/gpu_check.sh uses -arch=sm_90).
CUDA_ARCH ?=
NVCCFLAGS ?= -O3 $(CUDA_ARCH)
CUDA_LIB  := $(dir $(shell command -v $(NVCC) 2>/dev/null))../lib64

grpo_kernels.o: grpo_kernels.cu
	$(NVCC) $(NVCCFLAGS) -Xcompiler -Wall,-Wextra -c grpo_kernels.cu -o $@

grpo_cuda: grpo.c grpo_kernels.o
	$(CC) $(CFLAGS) $(OMP) -DGRPO_CUDA grpo.c grpo_kernels.o -o $@ $(LDLIBS) -L$(CUDA_LIB) -Wl,-rpath,$(CUDA_LIB) -lcudart -lcublas -lstdc++

# every CUDA kernel against the grpo.c CPU function it replaces
tests/test_cuda: tests/test_cuda.cu grpo.c grpo_kernels.o tests/ref_model.h
	$(NVCC) $(NVCCFLAGS) --diag-suppress=1675 -Xcompiler -Wall,-Wno-unused-function $(if $(OMP),-Xcompiler $(OMP)) \
	  tests/test_cuda.cu grpo_kernels.o -o $@ -lcublas

test-cuda: tests/test_cuda
	./tests/test_cuda

bench: grpo
	@OMP_NUM_THREADS=$${OMP_NUM_THREADS:-$$(nproc)} ./grpo bench | tee /tmp/grpo_bench.txt
	@if python3 -c 'import torch' 2>/dev/null; then \
	  python3 tests/bench_torch.py --threads $${OMP_NUM_THREADS:-$$(nproc)} --c-results /tmp/grpo_bench.txt; \
	else echo "bench: PyTorch not installed (pip install torch) - skipping the side-by-side comparison"; fi

# The CUDA build's bench (needs a GPU): the default model, then a larger one (8 layers, width
# 512, context 256); each beside PyTorch eager on the GPU when PyTorch with CUDA is installed.
# grpo_cuda bench also times the step's matmul products (cuBLAS) alone (the "sgemm" line).
BENCH_LARGE := --layers 8 --heads 8 --channels 512 --context 256
TORCH_LARGE := --L 8 --NH 8 --C 512 --maxT 256
TORCH_CUDA  := python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null
bench-cuda: grpo_cuda
	@./grpo_cuda bench | tee /tmp/grpo_bench_cuda.txt
	@if $(TORCH_CUDA); then python3 tests/bench_torch.py --device cuda --c-results /tmp/grpo_bench_cuda.txt; \
	else echo "bench-cuda: PyTorch with CUDA not installed - skipping the side-by-side comparison"; fi
	@./grpo_cuda bench $(BENCH_LARGE) | tee /tmp/grpo_bench_cuda_large.txt
	@if $(TORCH_CUDA); then python3 tests/bench_torch.py --device cuda $(TORCH_LARGE) --c-results /tmp/grpo_bench_cuda_large.txt; fi

# the main job: SFT if no SFT checkpoint exists, then λ-GRPO on countdown. Its model is 2 layers of
# width 192 (./grpo sft's default is 4 of 128), chosen on the validation split among five shapes
# (0.8-1.8 M parameters): +21.5 test points over 5 seeds, +8.8 for 4 x 128 from the same SFT seed
# (from another, +19.4: the SFT checkpoint matters as much; notes/results.md "The model's shape")
MAKERUN_MODEL := --layers 2 --channels 192
run: grpo
	@echo "$(WAIT_LINE)"
	@if [ ! -f runs/sft/model.bin ]; then echo "./grpo sft $(MAKERUN_MODEL)"; ./grpo sft $(MAKERUN_MODEL); \
	else echo "make: runs/sft/model.bin exists: reusing it (delete runs/sft for make run's own SFT model)"; fi
	@echo "./grpo train --overwrite 1"; ./grpo train --overwrite 1

# The default study (notes/compare.md): grpo and lambda-grpo x 5
# seeds at 1M generated tokens each, from one SFT checkpoint (runs/compare/sft, made if missing),
# one thread per run; 13.5 min on a 2-core AVX-512 machine (notes/results.md), 30-40 min estimated on a
# 3x slower one. Rerun to continue an interrupted study. Then
# the figure (runs/compare/compare.png) when matplotlib is installed.
compare: grpo
	@echo "$(WAIT_LINE)"
	./grpo compare
	@if python3 -c 'import matplotlib' 2>/dev/null; then python3 notes/plot.py --compare runs/compare; \
	else echo "make compare: matplotlib not installed (pip install matplotlib): no figure"; fi

# The Table 1 map (notes/results.md): ./grpo tree at 6 learning rates x group sizes 6, 16, 36, 20 seeds,
# 1,000 steps (18 commands, 2 at once: about 40 min on 2 cores), then its summary and figure in
# runs/tree_sweep (notes/tree_sweep.py: needs mpmath; matplotlib for the figure). Rerun to continue.
tree-sweep: grpo
	sh notes/tree_sweep.sh ./grpo runs/tree_sweep

# Course assignments (notes/assignments.md). `make assignment [IDS="prefix_tree ..."]` writes
# build/assignment/grpo.c with those functions' bodies (all of them without IDS) replaced by
# TODO stubs that compile; `make grade SRC=path/to/grpo.c [IDS=...]` scores a copy function
# by function with the test suite (tests/grade.sh; exit status 0 whatever the score).
# It does not overwrite a copy edited since it was written (your work) unless FORCE=1.
assignment:
	@FORCE="$(FORCE)" sh tests/make_assignment.sh -o build/assignment/grpo.c $(IDS)

grade:
	@if [ -z "$(SRC)" ]; then echo 'usage: make grade SRC=path/to/grpo.c [IDS="prefix_tree lambda_weight"]' >&2; exit 2; fi
	@CC="$(CC)" sh tests/grade.sh "$(SRC)" $(IDS)

clean:
	rm -f grpo grpo_cuda grpo_asan grpo_kernels.o tests/test_cuda tests/test_grpo tests/test_grpo_noomp tests/test_grpo_asan
	rm -f tests/test_grpo_portable tests/test_grpo_wide
	rm -rf build/assignment build/web

# Figures from the CSV logs under runs/, written to runs/figures/; each figure whose logs are
# missing is skipped, with the command that writes them. `make figures OUT=notes/figures`
# replaces the committed figures, on purpose (only OUT given on the command line counts, not
# an environment variable of that name). Needs matplotlib (pip install matplotlib).
FIGURES_OUT := $(if $(filter command line,$(origin OUT)),$(OUT),runs/figures)
figures:
	python3 notes/plot.py --runs runs --out $(FIGURES_OUT)

# The paper's experiments in a browser (notes/web): grpo.c compiled to WebAssembly by emscripten
# (Debian: apt-get install emscripten), one self-contained page, build/web/grpo.html, that opens
# from file:// offline: ./grpo tree (Table 1) live and ./grpo check on an editable worked example.
# -O1: Debian's emscripten 3.1.6 (clang 14) crashes at -O2 compiling trunk_backward.
WEB_SRC   := grpo.c notes/web/page.html notes/web/page.js notes/web/run.js notes/web/worker.js \
             notes/web/build.js notes/examples/worked_example.txt notes/examples/letters.txt
EMCCFLAGS := -O1 -sMODULARIZE=1 -sEXPORT_NAME=GRPO -sENVIRONMENT=web,worker,node -sALLOW_MEMORY_GROWTH=1 \
             -sEXIT_RUNTIME=1 -sINVOKE_RUN=0 -sFORCE_FILESYSTEM=1 -sEXPORTED_RUNTIME_METHODS=callMain,FS
web: build/web/grpo.html
build/web/grpo.html: $(WEB_SRC)
	@command -v emcc > /dev/null || { echo "make web: no emcc (Debian: apt-get install emscripten)"; exit 1; }
	@mkdir -p build/web
	emcc $(EMCCFLAGS) grpo.c -o build/web/grpo.js -lm
	node notes/web/build.js build/web

# The --html page of B(G) in headless Chromium (tests/browser_check.sh): the worked example and a
# countdown group under both objectives (the switch changes the pixels), the size of groups of
# 64 (draw times printed); then make web's page (notes/web/test_page.js: Table 1 against the same WebAssembly
# under node, bit for bit, the worked example against ./grpo check, nothing fetched). Without
# chromium, or emcc for the page, its summary line says SKIPPED (exit 0). `make test-browser
# OUT=notes/figures` also replaces the committed screenshots there (web_page.png after a grid of the
# preset). It uses runs/sft/model.bin (or makes a small one).
test-browser: grpo
	@bash tests/browser_check.sh $(if $(filter command line,$(origin OUT)),--out $(OUT))

# λ-GRPO and ./grpo check in TRL and verl (notes/checking-trainers.md): real TRL 1.16 training steps
# on CPU with a tiny local model, 1 and 2 processes, dumped and checked with ./grpo check; the
# package notes/trl (grpo_trl) pip-installed into TRL_PYTHON's environment and run from a temporary
# project outside the checkout; verl 0.9.1's loss functions (notes/verl). Not part of `make test`
# (~6 GB of Python packages): `sh notes/trl/install.sh VENV && make test-trl TRL_PYTHON=VENV/bin/python`.
.PHONY: test-trl
TRL_PYTHON ?= python3
test-trl: grpo
	$(TRL_PYTHON) notes/trl/test_trl.py --verl
