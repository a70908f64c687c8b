/* Builds greetings. */
#ifndef GREETING_H
#define GREETING_H

#include <stddef.h>

/* Writes "hello, <name>" into buf (at most size bytes, always NUL-terminated) and
 * returns the length the full greeting needs, like snprintf. */
int greet(char *buf, size_t size, const char *name);

#endif
