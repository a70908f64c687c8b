#include "greeting.h"

#include <stdio.h>

#include "text/text.h"

int greet_loudly(char *buf, size_t size, const char *name) {
    int needed = snprintf(buf, size, "hello, %s!", name);
    text_upper(buf);
    return needed;
}
