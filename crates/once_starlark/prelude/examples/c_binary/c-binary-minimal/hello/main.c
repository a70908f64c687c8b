/* Prints a greeting for the first argument. */
#include <stdio.h>

int main(int argc, char **argv) {
    const char *name = argc > 1 ? argv[1] : "stranger";
    printf("hello, %s\n", name);
    return 0;
}
