/* SPDX-License-Identifier: MIT */
#include "text_match.h"

#include <ctype.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

static int is_ident(char c) {
  return isalnum((unsigned char)c) || c == '_';
}

static int matches_at(const char *text, size_t at, const char *word) {
  size_t n = strlen(word);
  for (size_t i = 0; i < n; i++)
    if (tolower((unsigned char)text[at + i]) != tolower((unsigned char)word[i])) return 0;
  if (n > 2) return 1;
  return (at == 0 || !is_ident(text[at - 1])) && !is_ident(text[at + n]);
}

static int mentions_word(const char *text, const char *word) {
  size_t len = strlen(text), n = strlen(word);
  for (size_t at = 0; n <= len && at <= len - n; at++)
    if (matches_at(text, at, word)) return 1;
  return 0;
}

int text_mentions_any(const char *text, const char *const *words) {
  if (text == NULL) return 0;
  for (; *words != NULL; words++)
    if (mentions_word(text, *words)) return 1;
  return 0;
}

int text_mentions(const char *text, ...) {
  const char *words[16];
  size_t n = 0;
  va_list ap;
  va_start(ap, text);
  for (const char *w = va_arg(ap, const char *); w != NULL && n < 15; w = va_arg(ap, const char *))
    words[n++] = w;
  va_end(ap);
  words[n] = NULL;
  return text_mentions_any(text, words);
}

const char *text_word_list(const char *const *words, char *buf, unsigned size) {
  size_t used = 0;
  buf[0] = '\0';
  for (; *words != NULL && used < size; words++)
    used += (size_t)snprintf(buf + used, size - used, "%s%s", used ? "|" : "", *words);
  return buf;
}
