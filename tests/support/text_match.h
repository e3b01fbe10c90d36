/* SPDX-License-Identifier: MIT */
/* Does an error message or reason name what it should? */
#ifndef TXATTN_TEST_TEXT_MATCH_H
#define TXATTN_TEST_TEXT_MATCH_H

/* 1 if text mentions any of the words (a NULL-terminated list), ignoring case. Words of one or two
   characters ("q", "o") must stand alone, not inside an identifier, to count. */
int text_mentions_any(const char *text, const char *const *words);
/* The same with the words as arguments, ending with NULL. */
int text_mentions(const char *text, ...) __attribute__((sentinel));
/* The words of a list joined by '|', for failure messages. */
const char *text_word_list(const char *const *words, char *buf, unsigned size);

#endif
