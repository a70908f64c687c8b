#ifndef CLAMP_H
#define CLAMP_H

/* Returns value limited to the range [low, high]. */
int clamp_int(int value, int low, int high);

#endif
