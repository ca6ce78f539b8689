/* test_blas.c - the CBLAS that Algorithm 1 calls at run time is OpenBLAS, not GSL's
 * reference libgslcblas (a link-order accident made every dgemm ~20x slower once). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>

#include <cblas.h>
#include <criterion/criterion.h>

typedef void any_fn(void);

static const char *provider(any_fn *fn)
{
    Dl_info info;
    void *addr;
    memcpy(&addr, &fn, sizeof(addr)); /* ISO C: no direct function -> object cast */
    cr_assert_neq(dladdr(addr, &info), 0, "dladdr failed");
    return info.dli_fname ? info.dli_fname : "";
}

Test(blas, cblas_symbols_bind_to_openblas)
{
    any_fn *fns[] = {(any_fn *)cblas_dgemm, (any_fn *)cblas_dsyrk, (any_fn *)cblas_sgemm,
                     (any_fn *)cblas_ssyrk};
    for (size_t i = 0; i < sizeof(fns) / sizeof(*fns); i++)
        cr_assert(strstr(provider(fns[i]), "openblas") != NULL, "cblas symbol %zu comes from %s", i,
                  provider(fns[i]));
}
