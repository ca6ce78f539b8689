/* test_blas.c - the CBLAS that Algorithm 1 calls at run time is OpenBLAS, not GSL's
 * reference libgslcblas (a link-order accident made every dgemm ~20x slower once). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
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

char *openblas_get_config(void); /* OpenBLAS's own entry point (not in every cblas.h) */

/* The cblas_* functions this binary calls, and those the global scope hands to a shared
 * library such as GSL (dlsym(RTLD_DEFAULT)), come from the object that holds OpenBLAS's own
 * openblas_get_config: libopenblas.so, or the executable when OpenBLAS is linked statically
 * (gcdp_blas, top-level CMakeLists.txt), never libgslcblas. */
Test(blas, cblas_symbols_bind_to_openblas)
{
    static const char *const names[] = {"cblas_dgemm", "cblas_dsyrk", "cblas_sgemm", "cblas_ssyrk"};
    any_fn *fns[] = {(any_fn *)cblas_dgemm, (any_fn *)cblas_dsyrk, (any_fn *)cblas_sgemm,
                     (any_fn *)cblas_ssyrk};
    char ob[4096];

    snprintf(ob, sizeof(ob), "%s", provider((any_fn *)openblas_get_config));
    cr_assert(strstr(ob, "gslcblas") == NULL, "openblas_get_config comes from %s", ob);
    for (size_t i = 0; i < sizeof(fns) / sizeof(*fns); i++) {
        void *g = dlsym(RTLD_DEFAULT, names[i]);
        any_fn *gf;
        cr_assert_not_null(g, "%s not in the global scope", names[i]);
        memcpy(&gf, &g, sizeof(gf));
        cr_assert_str_eq(provider(fns[i]), ob, "%s comes from %s", names[i], provider(fns[i]));
        cr_assert_str_eq(provider(gf), ob, "%s (global scope) comes from %s", names[i],
                         provider(gf));
    }
}
