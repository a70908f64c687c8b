#include <stdio.h>

int main(void) {
    int failed = 0;
    printf("TAP version 13\n1..3\n");
    printf("ok 1 - adds\n");
    if (1 + 1 != 3) {
        printf("not ok 2 - fails\n  ---\n  message: one and one make two\n  ...\n");
        failed = 1;
    }
    printf("ok 3 - skipped # SKIP not on this machine\n");
    return failed;
}
