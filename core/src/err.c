/* err.c - core_strerror()/core_errname() generated from CORE_ERR_MAP. */
#include "core/err.h"

const char *core_strerror(core_err err)
{
    switch (err) {
#define X(name, value, msg)                                                                        \
    case name:                                                                                     \
        return msg;
        CORE_ERR_MAP(X)
#undef X
    }
    return "unknown error";
}

const char *core_errname(core_err err)
{
    switch (err) {
#define X(name, value, msg)                                                                        \
    case name:                                                                                     \
        return #name;
        CORE_ERR_MAP(X)
#undef X
    }
    return "CORE_E?";
}
