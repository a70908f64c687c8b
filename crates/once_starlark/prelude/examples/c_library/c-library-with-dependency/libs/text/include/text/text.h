/* Small string helpers. */
#ifndef TEXT_TEXT_H
#define TEXT_TEXT_H

/* Upper-cases the ASCII letters of s in place. */
void text_upper(char *s);

#endif
