#include "greeting.h"

#include <stdio.h>

int greet(char *buf, size_t size, const char *name) {
    return snprintf(buf, size, "hello, %s", name);
}
