/* Shouting: upper-cased text, for greetings that must be heard. */
#ifndef SHOUT_H
#define SHOUT_H

#include <stddef.h>

/* Copies `text` into `buf` with its ASCII letters upper-cased. At most `size` bytes are
 * written, always NUL-terminated when `size` is not 0. Returns the length of the whole
 * shouted text, like snprintf: a result >= `size` means it was cut short. */
size_t shout(char *buf, size_t size, const char *text);

#endif
