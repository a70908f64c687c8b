/* Tests calc_add; a failed check prints the expression and exits non-zero. */
#include <stdio.h>
#include <stdlib.h>

#include "calc.h"

static int failures = 0;

#define CHECK(expr)                                                  \
    do {                                                             \
        if (!(expr)) {                                               \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__,  \
                    __LINE__, #expr);                                \
            failures++;                                              \
        }                                                            \
    } while (0)

int main(void) {
    CHECK(calc_add(2, 3) == 5);
    CHECK(calc_add(INT64_MAX, 1) == INT64_MAX);
    CHECK(calc_add(INT64_MIN, -1) == INT64_MIN);
    if (failures > 0) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return EXIT_FAILURE;
    }
    puts("ok");
    return EXIT_SUCCESS;
}
