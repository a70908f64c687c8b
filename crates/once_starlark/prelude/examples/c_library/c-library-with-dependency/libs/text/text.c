#include "text/text.h"

#include <ctype.h>

void text_upper(char *s) {
    for (; *s != '\0'; s++) {
        *s = (char)toupper((unsigned char)*s);
    }
}
