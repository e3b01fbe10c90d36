/* SPDX-License-Identifier: MIT */
/* Plugin descriptor validation. A descriptor is data from a file we do not trust: every field is
 * checked before the host dereferences a pointer in it or calls a function of it, and the first bad
 * field is reported in words. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "plugin_check.h"

/* [a-z0-9_.-]{1,63}, and a '.' when need_dot. Reads at most 64 bytes of s. */
static int name_ok(const char *s, int need_dot) {
  size_t n = strnlen(s, 64);
  if (n == 0 || n > 63) return 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-'))
      return 0;
  }
  return !need_dot || memchr(s, '.', n) != NULL;
}

/* 1..TXATTN_MAX_PLUGIN_VERSION bytes of printable ASCII (0x20..0x7e); else 0 and why says what is
   wrong. Reads at most TXATTN_MAX_PLUGIN_VERSION + 1 bytes of s. */
static int version_ok(const char *s, char *why, size_t size) {
  size_t n = strnlen(s, TXATTN_MAX_PLUGIN_VERSION + 1);
  if (n == 0) return txattn__why_not(why, size, "plugin version is empty");
  if (n > TXATTN_MAX_PLUGIN_VERSION)
    return txattn__why_not(
        why, size, "plugin version is longer than %d bytes (a dispatch table holds no more)",
        TXATTN_MAX_PLUGIN_VERSION);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c < 0x20 || c > 0x7e)
      return txattn__why_not(
          why, size,
          "plugin version has the byte 0x%02x at offset %zu (only printable ASCII "
          "is allowed)",
          c, i);
  }
  return 1;
}

/* Some multiple of t->multiple_of lies in [min, max]. */
static int tunable_has_value(const txattn_tunable *t) {
  int64_t m = t->multiple_of, first = t->min / m * m;
  if (first < t->min && __builtin_add_overflow(first, m, &first)) return 0;
  return first <= t->max;
}

int txattn__tunable_value_ok(const txattn_tunable *t, int64_t v) {
  return v >= t->min && v <= t->max && v % t->multiple_of == 0;
}

static int tunable_ok(const txattn_tunable *t, size_t i, char *why, size_t size) {
  if (t->struct_size < sizeof *t)
    return txattn__why_not(why, size,
                           "tunables[%zu].struct_size = %zu is smaller than the ABI 1 size %zu", i,
                           t->struct_size, sizeof *t);
  if (t->name == NULL || !name_ok(t->name, 0))
    return txattn__why_not(why, size, "tunables[%zu].name is %s", i,
                           t->name ? "not [a-z0-9_.-]{1,63}" : "NULL");
  if (t->summary == NULL) return txattn__why_not(why, size, "tunable %s: summary is NULL", t->name);
  if (t->multiple_of < 1)
    return txattn__why_not(why, size, "tunable %s: multiple_of = %" PRId64 " must be >= 1", t->name,
                           t->multiple_of);
  if (t->min > t->max || !tunable_has_value(t))
    return txattn__why_not(
        why, size, "tunable %s: no value in [%" PRId64 ", %" PRId64 "] is a multiple of %" PRId64,
        t->name, t->min, t->max, t->multiple_of);
  return 1;
}

static int tunables_ok(const txattn_kernel_desc *k, char *why, size_t size) {
  if (k->n_tunables == 0) return 1;
  if (k->n_tunables > TXATTN_MAX_TUNABLES)
    return txattn__why_not(why, size, "n_tunables = %zu (more than %d: a corrupt descriptor?)",
                           k->n_tunables, TXATTN_MAX_TUNABLES);
  if (k->tunables == NULL)
    return txattn__why_not(why, size, "n_tunables = %zu but tunables is NULL", k->n_tunables);
  if (k->default_tunables == NULL)
    return txattn__why_not(why, size, "has tunables but default_tunables is NULL");
  for (size_t i = 0; i < k->n_tunables; i++) {
    if (!tunable_ok(&k->tunables[i], i, why, size)) return 0;
    for (size_t j = 0; j < i; j++)
      if (strcmp(k->tunables[j].name, k->tunables[i].name) == 0)
        return txattn__why_not(why, size, "tunable %s is declared twice", k->tunables[i].name);
  }
  return 1;
}

static int kernel_fields_ok(const txattn_kernel_desc *k, char *why, size_t size) {
  if (k->summary == NULL) return txattn__why_not(why, size, "summary is NULL");
  if ((unsigned)k->isa >= TXATTN_ISA_COUNT_)
    return txattn__why_not(why, size, "isa = %u is not a txattn_isa", (unsigned)k->isa);
  if (k->flags & ~TXATTN_KERNEL_FLAGS_ALL_)
    return txattn__why_not(why, size, "flags = 0x%x has unknown bits 0x%x", k->flags,
                           k->flags & ~TXATTN_KERNEL_FLAGS_ALL_);
  if ((k->flags & TXATTN_KERNEL_PACKED) && !(k->flags & TXATTN_KERNEL_RAGGED))
    return txattn__why_not(why, size,
                           "flags has TXATTN_KERNEL_PACKED without TXATTN_KERNEL_RAGGED (packed "
                           "rows are a ragged batch)");
  if (!(isfinite(k->speed_hint) && k->speed_hint > 0.0f))
    return txattn__why_not(why, size, "speed_hint = %g must be a positive GFLOP/s estimate",
                           (double)k->speed_hint);
  if (k->applicable == NULL) return txattn__why_not(why, size, "applicable is NULL");
  if (k->workspace_size == NULL) return txattn__why_not(why, size, "workspace_size is NULL");
  if (k->run == NULL) return txattn__why_not(why, size, "run is NULL");
  if (TXATTN_KERNEL_DESC_HAS(k, one_thread_same_as) && k->one_thread_same_as != NULL) {
    if (!name_ok(k->one_thread_same_as, 1))
      return txattn__why_not(why, size,
                             "one_thread_same_as must name a kernel (\"<algorithm>.<isa>\")");
    if (!(k->flags & TXATTN_KERNEL_THREADED))
      return txattn__why_not(why, size,
                             "one_thread_same_as names \"%.63s\", but the kernel is not "
                             "TXATTN_KERNEL_THREADED (it always runs on one thread)",
                             k->one_thread_same_as);
    if (strncmp(k->one_thread_same_as, k->name, 64) == 0)
      return txattn__why_not(why, size, "one_thread_same_as names the kernel itself");
  }
  if (TXATTN_KERNEL_DESC_HAS(k, dtypes))
    for (int i = 0; i < 4; i++) { /* the 8-bit (1.8) and 4-bit (1.9) types are K's and V's only */
      const unsigned allowed =
          TXATTN_DTYPES_ALL | (i == 1 || i == 2 ? TXATTN_DTYPES_KV8 | TXATTN_DTYPES_KV4 : 0u);
      if (k->dtypes[i] & ~allowed)
        return txattn__why_not(why, size, "dtypes[%d] = 0x%x has bits of no txattn_dtype %s takes",
                               i, k->dtypes[i],
                               i == 0   ? "q"
                               : i == 3 ? "o"
                                        : "k or v");
    }
  return tunables_ok(k, why, size);
}

static int kernel_ok(const txattn_kernel_desc *k, size_t i, char *why, size_t size) {
  char sub[200];
  if (k == NULL) return txattn__why_not(why, size, "kernels[%zu] is NULL", i);
  if (k->struct_size < TXATTN_KERNEL_DESC_MIN_SIZE)
    return txattn__why_not(
        why, size,
        "kernels[%zu].struct_size = %zu is smaller than the ABI 1 size %zu (truncated "
        "descriptor)",
        i, k->struct_size, (size_t)TXATTN_KERNEL_DESC_MIN_SIZE);
  if (k->name == NULL) return txattn__why_not(why, size, "kernels[%zu].name is NULL", i);
  if (!name_ok(k->name, 1))
    return txattn__why_not(
        why, size,
        "kernels[%zu].name \"%.63s\" must match [a-z0-9_.-]{1,63} and contain a '.' "
        "(\"<algorithm>.<isa>\")",
        i, k->name);
  if (!kernel_fields_ok(k, sub, sizeof sub))
    return txattn__why_not(why, size, "kernel %s: %s", k->name, sub);
  return 1;
}

static int plugin_fields_ok(const txattn_plugin_desc *d, char *why, size_t size) {
  if (d->name == NULL) return txattn__why_not(why, size, "plugin name is NULL");
  if (!name_ok(d->name, 0))
    return txattn__why_not(why, size, "plugin name \"%.63s\" must match [a-z0-9_.-]{1,63}",
                           d->name);
  if (d->version == NULL) return txattn__why_not(why, size, "plugin version is NULL");
  if (!version_ok(d->version, why, size)) return 0;
  if (d->summary == NULL) return txattn__why_not(why, size, "plugin summary is NULL");
  if (d->n_kernels == 0)
    return txattn__why_not(why, size, "the plugin declares no kernels (n_kernels = 0)");
  if (d->n_kernels > TXATTN_MAX_KERNELS_PER_PLUGIN)
    return txattn__why_not(why, size, "n_kernels = %zu (more than %d: a corrupt descriptor?)",
                           d->n_kernels, TXATTN_MAX_KERNELS_PER_PLUGIN);
  if (d->kernels == NULL)
    return txattn__why_not(why, size, "n_kernels = %zu but kernels is NULL", d->n_kernels);
  return 1;
}

int txattn__plugin_desc_ok(const txattn_plugin_desc *d, char *why, size_t size) {
  size_t abi_end = offsetof(txattn_plugin_desc, abi_version) + sizeof d->abi_version;
  if (d->struct_size < abi_end)
    return txattn__why_not(
        why, size, "descriptor struct_size = %zu is too small to hold abi_version (truncated)",
        d->struct_size);
  if (d->abi_version != TXATTN_PLUGIN_ABI_VERSION)
    return txattn__why_not(why, size, "built for plugin ABI %u, but this libtxattn speaks ABI %u",
                           (unsigned)d->abi_version, TXATTN_PLUGIN_ABI_VERSION);
  if (d->struct_size < sizeof *d)
    return txattn__why_not(
        why, size,
        "descriptor struct_size = %zu is smaller than the ABI 1 size %zu (truncated "
        "descriptor)",
        d->struct_size, sizeof *d);
  if (!plugin_fields_ok(d, why, size)) return 0;
  for (size_t i = 0; i < d->n_kernels; i++) {
    if (!kernel_ok(d->kernels[i], i, why, size)) return 0;
    for (size_t j = 0; j < i; j++)
      if (strcmp(d->kernels[j]->name, d->kernels[i]->name) == 0)
        return txattn__why_not(why, size, "kernel %s is declared twice", d->kernels[i]->name);
  }
  return 1;
}

unsigned txattn__desc_dtypes(const txattn_kernel_desc *d, int tensor) {
  unsigned takes = TXATTN_KERNEL_DESC_HAS(d, dtypes) ? d->dtypes[tensor] : 0;
  return takes != 0 ? takes : TXATTN_DTYPE_BIT(TXATTN_DTYPE_F32);
}

int txattn__desc_applicable(const txattn_kernel_desc *d, const txattn_problem *r,
                            const char **why) {
#define TAKES_NOT(t)                                                                               \
  {                                                                                                \
    "it does not take " t " q", "it does not take " t " k", "it does not take " t " v",            \
        "it does not make " t " o"                                                                 \
  }
  static const char *const declined[][4] = {TAKES_NOT("f32"),  TAKES_NOT("f16"),  TAKES_NOT("bf16"),
                                            TAKES_NOT("q8_0"), TAKES_NOT("e4m3"), TAKES_NOT("e5m2"),
                                            TAKES_NOT("q4_0")};
  _Static_assert(sizeof declined / sizeof declined[0] == TXATTN_DTYPE_Q4_0 + 1,
                 "a message for every txattn_dtype");
#undef TAKES_NOT
  const txattn_dtype types[4] = {r->q_type, r->k_type, r->v_type, r->o_type};
  for (int i = 0; i < 4; i++) {
    if (!(txattn__desc_dtypes(d, i) & TXATTN_DTYPE_BIT(types[i]))) {
      *why = declined[types[i]][i];
      return 0;
    }
  }
  if (r->lse && !(d->flags & TXATTN_KERNEL_LSE)) {
    *why = "it does not write lse";
    return 0;
  }
  /* the score modifiers (ABI 1.6) and a mask tensor (1.7) go only to kernels that declare them */
  const struct {
    int asked;
    unsigned flag;
    const char *why;
  } mods[5] = {
      {r->softcap > 0.0f, TXATTN_KERNEL_SOFTCAP, "it does not compute softcap"},
      {r->alibi, TXATTN_KERNEL_ALIBI, "it does not compute ALiBi"},
      {r->sinks, TXATTN_KERNEL_SINKS, "it does not compute sink logits"},
      {r->sink_keys > 0, TXATTN_KERNEL_SINK_KEYS, "it does not compute sink keys"},
      {r->mask_tensor != TXATTN_MASK_TENSOR_NONE, TXATTN_KERNEL_MASK_TENSOR,
       "it does not take a mask tensor"},
  };
  for (int i = 0; i < 5; i++)
    if (mods[i].asked && !(d->flags & mods[i].flag)) {
      *why = mods[i].why;
      return 0;
    }
  if (r->page_size > 0 && !(d->flags & TXATTN_KERNEL_PAGED)) {
    *why = "it does not read paged K/V";
    return 0;
  }
  /* a kernel without TXATTN_KERNEL_RAGGED (or, for packed rows, TXATTN_KERNEL_PACKED) runs each
     sequence as a problem of its own: it judges the dense problem of the tensors' capacity */
  txattn_problem dense = TXATTN_PROBLEM_INIT;
  if (txattn__per_sequence(r, d->flags)) {
    dense = *r;
    dense.ragged = 0;
    dense.packed = 0;
    r = &dense;
  }
  *why = NULL;
  if (d->applicable(r, why)) return 1;
  if (*why == NULL) *why = "(the kernel gave no reason)";
  return 0;
}
