// libFuzzer harness for grpo.c: dataset (see fz_entry.h fz_run_dataset and README.md)
#include "fz_harness.h"
#include FZ_GRPO_SRC
#include "fz_entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fz_fuzz_one(fz_run_dataset, data, size); }
