/* Builds shouted greetings. */
#ifndef GREETING_H
#define GREETING_H

#include <stddef.h>

/* A buffer size that holds the greeting of any reasonable name (set by `defines`). */
#ifndef GREETING_MAX
#define GREETING_MAX 32
#endif

/* Writes "HELLO, <NAME>!" into buf (at most size bytes, always NUL-terminated; size
 * must not be 0) and returns the length the full greeting needs, like snprintf. */
int greet_loudly(char *buf, size_t size, const char *name);

#endif
