/* Tests of shout(); a failed check prints the expression and the test exits non-zero. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shout.h"

static int failures = 0;

#define CHECK(expr)                                                          \
    do {                                                                     \
        if (!(expr)) {                                                       \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
                    #expr);                                                  \
            failures++;                                                      \
        }                                                                    \
    } while (0)

int main(void) {
    char buf[32];

    CHECK(shout(buf, sizeof buf, "Hello, World!") == 13);
    CHECK(strcmp(buf, "HELLO, WORLD!") == 0);

    CHECK(shout(buf, sizeof buf, "") == 0);
    CHECK(strcmp(buf, "") == 0);

    /* Too small a buffer: cut short but terminated, and the full length is returned. */
    CHECK(shout(buf, 4, "hello") == 5);
    CHECK(strcmp(buf, "HEL") == 0);

    /* Non-ASCII bytes pass through unchanged. */
    CHECK(shout(buf, sizeof buf, "d\xc3\xa9j\xc3\xa0") == 6);
    CHECK(strcmp(buf, "D\xc3\xa9J\xc3\xa0") == 0);

    if (failures > 0) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return EXIT_FAILURE;
    }
    puts("ok");
    return EXIT_SUCCESS;
}
