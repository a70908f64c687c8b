#include <stdio.h>

int main(void) {
    printf("all good\n");
    return 0;
}
