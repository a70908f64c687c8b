/* Small arithmetic helpers. */
#ifndef CALC_H
#define CALC_H

#include <stdint.h>

/* Adds two numbers, saturating at the bounds of int64_t. */
int64_t calc_add(int64_t a, int64_t b);

#endif
