/* test_names.c - the readings' names (eval/eval.h): each name parses back to its value; any
 * other word is refused and leaves the value. */
#include <criterion/criterion.h>

#include "eval/eval.h"

Test(names, readings_round_trip_and_refuse_others)
{
    enum eval_expo e = EVAL_EXPO_MAXNORM;
    enum eval_xi x = EVAL_XI_NEIGHBOUR;

    cr_assert_str_eq(eval_expo_name(EVAL_EXPO_MINMAX), "minmax");
    cr_assert_str_eq(eval_xi_name(EVAL_XI_NEIGHBOUR), "neighbour");
    cr_assert_eq(eval_expo_parse(eval_expo_name(EVAL_EXPO_MINMAX), &e), CORE_OK);
    cr_assert_eq(e, EVAL_EXPO_MINMAX);
    cr_assert_eq(eval_xi_parse(eval_xi_name(EVAL_XI_LITERAL), &x), CORE_OK);
    cr_assert_eq(x, EVAL_XI_LITERAL);
    cr_assert_eq(eval_expo_parse("MinMax", &e), CORE_EINVAL);
    cr_assert_eq(eval_xi_parse("neighbor", &x), CORE_EINVAL);
    cr_assert_eq(e, EVAL_EXPO_MINMAX, "a refused word leaves the value");
    cr_assert_eq(x, EVAL_XI_LITERAL);
}
