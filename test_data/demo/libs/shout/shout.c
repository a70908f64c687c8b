#include "shout.h"

#include <ctype.h>

size_t shout(char *buf, size_t size, const char *text) {
    size_t len = 0;
    for (; text[len] != '\0'; len++) {
        if (len + 1 < size) {
            buf[len] = (char)toupper((unsigned char)text[len]);
        }
    }
    if (size > 0) {
        buf[len < size ? len : size - 1] = '\0';
    }
    return len;
}
