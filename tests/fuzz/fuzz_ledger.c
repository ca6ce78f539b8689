/* fuzz_ledger.c - libFuzzer entry for gcdp_fuzz_ledger (targets.h); preset "fuzz",
 * docs/operations.md. */
#include <stddef.h>
#include <stdint.h>

#include "targets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return gcdp_fuzz_ledger(data, size);
}
