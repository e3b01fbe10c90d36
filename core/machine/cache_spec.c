/* SPDX-License-Identifier: MIT */
/* Parsing the cache size override "l1d=48K,l2=1M,l3=32M". Written by hand rather than with
 * strtod/strtoll, whose decimal point and blanks follow the program's locale. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cache_spec.h"
#include "error.h"

#define KIB INT64_C(1024)
#define TIB (KIB * KIB * KIB * KIB)

typedef struct span {
  const char *s;
  size_t n;
} span;

static char lower(char c) {
  return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

static int is_digit(char c) {
  return c >= '0' && c <= '9';
}

static span trim(span x) {
  while (x.n > 0 && (x.s[0] == ' ' || x.s[0] == '\t')) x.s++, x.n--;
  while (x.n > 0 && (x.s[x.n - 1] == ' ' || x.s[x.n - 1] == '\t')) x.n--;
  return x;
}

static int equals(span x, const char *word) {
  size_t n = strlen(word);
  if (x.n != n) return 0;
  for (size_t i = 0; i < n; i++)
    if (lower(x.s[i]) != word[i]) return 0;
  return 1;
}

/* The multiplier a suffix stands for, or 0 when it is not one. */
static int64_t unit_of(span suffix) {
  static const struct {
    const char *name;
    int64_t unit;
  } units[] = {{"", 1},
               {"b", 1},
               {"k", KIB},
               {"kb", KIB},
               {"kib", KIB},
               {"m", KIB * KIB},
               {"mb", KIB * KIB},
               {"mib", KIB * KIB},
               {"g", KIB * KIB * KIB},
               {"gb", KIB * KIB * KIB},
               {"gib", KIB * KIB * KIB}};
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (equals(suffix, units[i].name)) return units[i].unit;
  return 0;
}

/* The bytes value v stands for, or -1 with *why set. */
static int64_t parse_size(span v, const char **why) {
  size_t i = 0;
  int64_t whole = 0, num = 0, den = 1;
  if (v.n == 0 || !is_digit(v.s[0])) {
    *why = "the size must start with a digit";
    return -1;
  }
  for (; i < v.n && is_digit(v.s[i]); i++) {
    whole = whole * 10 + (v.s[i] - '0');
    if (whole > TIB) {
      *why = "the size is above 1 TiB";
      return -1;
    }
  }
  if (i < v.n && v.s[i] == '.') {
    if (++i == v.n || !is_digit(v.s[i])) {
      *why = "a digit must follow the decimal point";
      return -1;
    }
    for (; i < v.n && is_digit(v.s[i]); i++)
      if (den < INT64_C(1000000000)) num = num * 10 + (v.s[i] - '0'), den *= 10;
  }
  int64_t unit = unit_of((span){v.s + i, v.n - i});
  if (unit == 0) {
    *why = "unknown size suffix (use K, M or G, or none for bytes)";
    return -1;
  }
  if (whole > TIB / unit) {
    *why = "the size is above 1 TiB";
    return -1;
  }
  int64_t bytes = whole * unit + num * unit / den;
  if (bytes < KIB) *why = "the size is below 1 KiB (a size without a suffix counts bytes)";
  if (bytes > TIB) *why = "the size is above 1 TiB";
  return bytes < KIB || bytes > TIB ? -1 : bytes;
}

static txattn_status bad_item(const char *text, const char *origin, span item, const char *why) {
  return txattn__fail(
      TXATTN_E_INVALID,
      "%s = \"%.200s\": item \"%.*s\": %s (expected items like l1d=48K,l2=1M,l3=32M)", origin, text,
      (int)(item.n > 100 ? 100 : item.n), item.s, why);
}

static txattn_status parse_item(const char *text, const char *origin, span item,
                                txattn__cache_spec *out) {
  const char *eq = memchr(item.s, '=', item.n);
  if (item.n == 0) return bad_item(text, origin, item, "empty item");
  if (eq == NULL) return bad_item(text, origin, item, "no '=' between the cache and its size");
  span key = trim((span){item.s, (size_t)(eq - item.s)});
  span value = trim((span){eq + 1, item.n - (size_t)(eq + 1 - item.s)});
  int64_t *dst = equals(key, "l1d")  ? &out->l1d
                 : equals(key, "l2") ? &out->l2
                 : equals(key, "l3") ? &out->l3
                                     : NULL;
  if (dst == NULL) return bad_item(text, origin, item, "unknown cache (use l1d, l2 or l3)");
  if (*dst != 0) return bad_item(text, origin, item, "this cache is set twice");
  const char *why = NULL;
  int64_t bytes = parse_size(value, &why);
  if (bytes < 0) return bad_item(text, origin, item, why);
  *dst = bytes;
  return TXATTN_OK;
}

txattn_status txattn__cache_spec_parse(const char *text, const char *origin,
                                       txattn__cache_spec *out) {
  txattn__cache_spec spec = {0, 0, 0};
  if (trim((span){text, strlen(text)}).n > 0) {
    for (const char *p = text;; p++) {
      const char *end = strchr(p, ',');
      size_t n = end ? (size_t)(end - p) : strlen(p);
      TXATTN_FORWARD_IF_ERROR(parse_item(text, origin, trim((span){p, n}), &spec));
      if (end == NULL) break;
      p = end;
    }
  }
  *out = spec;
  return TXATTN_OK;
}
