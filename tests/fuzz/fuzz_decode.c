/* fuzz_decode.c - libFuzzer target: the fast reading decoder against the jansson reference
 * (tests/ingest/decode_diff.h); any disagreement aborts. Input: byte 0 selects the key
 * situation (key "m1" / no key / key_policy ignore), the rest is the payload.
 * Build and run (clang, ASan+UBSan, coverage-guided; docs/ingest.md "Decoder"):
 *   cmake --preset fuzz && cmake --build --preset fuzz --target fuzz_decode
 *   mkdir -p /tmp/fuzz-decode && build/fuzz/tests/fuzz_decode -runs=1000000 \
 *       /tmp/fuzz-decode tests/fuzz/corpus
 * (new inputs go to the first directory; tests/fuzz/corpus is the committed seed corpus). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "decode_diff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct ing_params p;
    static struct ing__fj *fj;
    struct dd_stats st;
    char why[512];
    uint8_t km;

    if (!fj) {
        ing_params_default(&p);
        fj = ing__fj_new(p.max_message_bytes);
        if (!fj)
            abort();
    }
    if (size == 0)
        return 0;
    km = data[0] % 3;
    p.key_policy = km == 2 ? ING_KEY_IGNORE : ING_KEY_REQUIRE;
    memset(&st, 0, sizeof(st));
    if (!dd_check(&p, fj, (const char *)data + 1, size - 1, km == 1 ? NULL : "m1", km == 1 ? 0 : 2,
                  1000, &st, why, sizeof(why))) {
        fprintf(stderr, "fuzz_decode: decoders disagree: %s\n", why);
        abort();
    }
    return 0;
}
