/* names.c - the names of the evaluation's readings (eval/eval.h): one table each, read by
 * the CLI's parser and by run.txt. */
#include <string.h>

#include "eval/eval.h"

static const char *const expo_names[] = {
    [EVAL_EXPO_MINMAX] = "minmax", [EVAL_EXPO_MAXNORM] = "maxnorm"};
static const char *const xi_names[] = {
    [EVAL_XI_LITERAL] = "literal", [EVAL_XI_NEIGHBOUR] = "neighbour"};

const char *eval_expo_name(enum eval_expo e)
{
    return e == EVAL_EXPO_MAXNORM ? expo_names[EVAL_EXPO_MAXNORM] : expo_names[EVAL_EXPO_MINMAX];
}

const char *eval_xi_name(enum eval_xi x)
{
    return x == EVAL_XI_NEIGHBOUR ? xi_names[EVAL_XI_NEIGHBOUR] : xi_names[EVAL_XI_LITERAL];
}

core_err eval_expo_parse(const char *name, enum eval_expo *out)
{
    for (int e = EVAL_EXPO_MINMAX; e <= EVAL_EXPO_MAXNORM; e++)
        if (strcmp(name, expo_names[e]) == 0) {
            *out = (enum eval_expo)e;
            return CORE_OK;
        }
    return CORE_EINVAL;
}

core_err eval_xi_parse(const char *name, enum eval_xi *out)
{
    for (int x = EVAL_XI_LITERAL; x <= EVAL_XI_NEIGHBOUR; x++)
        if (strcmp(name, xi_names[x]) == 0) {
            *out = (enum eval_xi)x;
            return CORE_OK;
        }
    return CORE_EINVAL;
}
