/* SPDX-License-Identifier: MIT */
/* The machine topology: hwloc's cache sizes checked for plausibility (faked topologies from
 * tests/data through HWLOC_XMLFILE, which hwloc reads instead of this machine), the cache override
 * (txattn_options.caches beats $TXATTN_CACHES; a malformed option is refused and a malformed variable
 * ignored with a note, each naming the item), the
 * plan's tunable getters, and the tiled kernels' block sizes following the L2 they are given.
 * Criterion runs each test in its own process, so each sets the variables before its first context,
 * when the library probes the hardware. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <criterion/redirect.h>

#include "test_context.h"
#include "text_match.h"
#include "txattn/plugin.h"
#include "txattn/txattn.h"

#define KIB INT64_C(1024)
#define MIB (KIB * KIB)

static void clean_env(void) {
  test_env_clean();
  unsetenv("TXATTN_CACHES");
  unsetenv("HWLOC_XMLFILE");
  unsetenv("HWLOC_THISSYSTEM");
  unsetenv("HWLOC_SYNTHETIC");
  unsetenv("HWLOC_XML_VERBOSE");
}

TestSuite(topology, .init = clean_env, .fini = test_check_leaks, .timeout = 60);

/* Reads the faked topology tests/data/<name> from now on in this process; path (NULL if not
   wanted) gets the file's path. */
static void fake_topology_at(const char *name, char *path, size_t size) {
  char file[1024];
  snprintf(file, sizeof file, "%s/%s", TXATTN_TEST_DATA_DIR, name);
  if (path) snprintf(path, size, "%s", file);
  cr_assert_eq(setenv("HWLOC_XMLFILE", file, 1), 0);
}

static void fake_topology(const char *name) {
  fake_topology_at(name, NULL, 0);
}

static txattn_status try_context(const char *caches, txattn_context **ctx) {
  txattn_options opts = {.table_path = "", .caches = caches};
  return txattn_context_create(&opts, ctx);
}

static txattn_context *context(const char *caches) {
  txattn_context *ctx = NULL;
  txattn_status s = try_context(caches, &ctx);
  cr_assert_eq(s, TXATTN_OK, "txattn_context_create(caches=%s): %s: %s", caches ? caches : "NULL",
               txattn_status_name(s), txattn_last_error());
  return ctx;
}

static txattn_machine_info machine(const char *caches) {
  txattn_context *ctx = context(caches);
  txattn_machine_info m = TXATTN_MACHINE_INFO_INIT;
  txattn_status s = txattn_context_machine(ctx, &m);
  cr_assert_eq(s, TXATTN_OK, "txattn_context_machine: %s", txattn_last_error());
  txattn_context_free(ctx);
  return m;
}

/* Whether text names the file at path whole, or points at txattn_machine_info.topology_file
   without any part of the path (its first 24 bytes): never a cut path. */
static int names_file(const char *text, const char *path) {
  if (strstr(text, path) != NULL) return 1;
  for (const char *t = text; *t; t++)
    if (strncmp(t, path, 24) == 0) return 0;
  return strstr(text, "txattn_machine_info.topology_file") != NULL;
}

static int plausible(int64_t v, int64_t lo, int64_t hi) {
  return v >= lo && v <= hi;
}

Test(topology, a_normal_topology_passes_through_unchanged) {
  char path[1024];
  /* 2 packages x 4 cores x 2 threads, 48K / 1.25M / 12M per 4 */
  fake_topology_at("topo-normal.xml", path, sizeof path);
  txattn_machine_info m = machine(NULL);
  test_expect_topology_file(&m, path);
  cr_expect_eq(m.hw_l1d_bytes, 48 * KIB);
  cr_expect_eq(m.hw_l2_bytes, 1280 * KIB);
  cr_expect_eq(m.hw_l3_bytes, 3 * MIB, "12 MiB shared by 4 cores is 3 MiB per core, got %lld",
               (long long)m.hw_l3_bytes);
  cr_expect_eq(m.hw_cache_total_bytes[2], 12 * MIB);
  cr_expect_eq(m.hw_cache_cores[2], 4);
  cr_expect_eq(m.l1d_bytes, m.hw_l1d_bytes);
  cr_expect_eq(m.l2_bytes, m.hw_l2_bytes);
  cr_expect_eq(m.l3_bytes, m.hw_l3_bytes);
  cr_expect_str_eq(m.cache_notes, "");
  cr_expect_str_eq(m.cache_source, "hwloc");
  cr_expect_eq(m.n_cores, 8);
  cr_expect_eq(m.n_pus, 16);
  cr_expect_eq(m.n_numa, 2);
}

Test(topology, a_508_mib_l3_per_core_is_replaced_with_a_note_naming_l3) {
  fake_topology("topo-huge-l3.xml"); /* one 1016 MiB L3 over 2 cores, as this VM once reported */
  txattn_machine_info m = machine(NULL);
  cr_expect_eq(m.hw_l3_bytes, 508 * MIB);
  cr_expect(plausible(m.l3_bytes, 512 * KIB, 64 * MIB), "l3 used: %lld", (long long)m.l3_bytes);
  cr_expect(m.l3_bytes >= m.l2_bytes / 2);
  cr_expect(text_mentions(m.cache_notes, "l3:", NULL), "notes: %s", m.cache_notes);
  cr_expect(strstr(m.cache_notes, "508 MiB") != NULL, "the note must give the reported value: %s",
            m.cache_notes);
  cr_expect(!text_mentions(m.cache_notes, "l1d:", "l2:", NULL), "only l3 is wrong: %s",
            m.cache_notes);
  cr_expect_eq(m.l1d_bytes, 32 * KIB);
  cr_expect_eq(m.l2_bytes, 512 * KIB);
  cr_expect_neq(strcmp(m.cache_source, "hwloc"), 0, "source: %s", m.cache_source);
}

/* With HWLOC_THISSYSTEM=1 the file counts as this machine, so cpuid may stand in where it has a
   cache leaf (x86); elsewhere the typical size does. Either way the note says which. */
Test(topology, a_508_mib_l3_on_this_system_is_checked_against_cpuid) {
  fake_topology("topo-huge-l3.xml");
  setenv("HWLOC_THISSYSTEM", "1", 1);
  txattn_machine_info m = machine(NULL);
  cr_expect(plausible(m.l3_bytes, 512 * KIB, 64 * MIB), "l3 used: %lld", (long long)m.l3_bytes);
  cr_expect(text_mentions(m.cache_notes, "l3:", NULL), "notes: %s", m.cache_notes);
  int by_cpuid = strstr(m.cache_notes, "cpuid") != NULL;
  cr_expect(by_cpuid || strstr(m.cache_notes, "typical") || strstr(m.cache_notes, "clamped"),
            "the note must say what replaced the value: %s", m.cache_notes);
  cr_expect_eq(by_cpuid, strstr(m.cache_source, "cpuid") != NULL, "source %s, notes %s",
               m.cache_source, m.cache_notes);
}

Test(topology, a_missing_l2_gets_a_plausible_size_and_a_note) {
  fake_topology("topo-no-l2.xml");
  txattn_machine_info m = machine(NULL);
  cr_expect_eq(m.hw_l2_bytes, 0);
  cr_expect(plausible(m.l2_bytes, 128 * KIB, 16 * MIB), "l2 used: %lld", (long long)m.l2_bytes);
  cr_expect(m.l2_bytes > m.l1d_bytes);
  cr_expect(text_mentions(m.cache_notes, "l2:", NULL), "notes: %s", m.cache_notes);
  cr_expect_eq(m.l3_bytes, 8 * MIB, "the L3 (16 MiB over 2 cores) is fine");
}

Test(topology, a_missing_l3_is_taken_to_be_the_l2) {
  fake_topology("topo-no-l3.xml"); /* 1 MiB of L2 per core and no L3, like many arm64 chips */
  txattn_machine_info m = machine(NULL);
  cr_expect_eq(m.hw_l3_bytes, 0);
  cr_expect_eq(m.l3_bytes, 1 * MIB, "the last level is the L2: got %lld", (long long)m.l3_bytes);
  cr_expect(text_mentions(m.cache_notes, "l3:", NULL), "notes: %s", m.cache_notes);
}

/* L1d 128K and L2 128K per core are each plausible but cannot both be right; an L3 of 384 KiB per
   core is less than 2x below the plausible 512 KiB: clamped, not replaced. */
Test(topology, levels_out_of_order_or_just_out_of_range_are_fixed) {
  fake_topology("topo-odd.xml");
  txattn_machine_info m = machine(NULL);
  cr_expect_eq(m.l1d_bytes, 128 * KIB);
  cr_expect_gt(m.l2_bytes, m.l1d_bytes, "l2 %lld", (long long)m.l2_bytes);
  cr_expect_geq(m.l3_bytes, 512 * KIB, "l3 %lld", (long long)m.l3_bytes);
  cr_expect_geq(m.l3_bytes, m.l2_bytes / 2);
  cr_expect(strstr(m.cache_notes, "l2:") && strstr(m.cache_notes, "l3:") &&
                strstr(m.cache_notes, "clamped"),
            "notes: %s", m.cache_notes);
}

/* A truncated file: hwloc reads this machine instead (libxml2's parser, from the libhwloc-plugins
   package, finds the damage when the file is set) or gives no topology (its built-in parser finds it
   at the load). Either way the notes name the file, the counts and caches are this machine's
   (cpuid, the CPUs this process may use), and neither hwloc nor the library prints a word. */
static void expect_unreadable_noted(const char *path) {
  txattn_machine_info m = machine(NULL);
  cr_expect(m.topology_file && strcmp(m.topology_file, path) == 0, "topology_file %s, want %s",
            m.topology_file ? m.topology_file : "(NULL)", path);
  cr_expect(strstr(m.cache_notes, "HWLOC_XMLFILE=") && names_file(m.cache_notes, path), "notes: %s",
            m.cache_notes);
  cr_expect(strstr(m.topology_source, "this system") != NULL ||
                strstr(m.topology_source, "none: cannot load HWLOC_XMLFILE=") != NULL,
            "source: %s", m.topology_source);
  cr_expect(strstr(m.topology_source, "(HWLOC_XMLFILE)") == NULL, "not the file's: %s",
            m.topology_source);
  if (strncmp(m.topology_source, "none:", 5) == 0)
    cr_expect(names_file(m.topology_source, path), "source: %s", m.topology_source);
  cr_expect(m.n_pus >= 1 && m.n_cores >= 1 && m.n_numa >= 1);
  cr_expect(plausible(m.l2_bytes, 128 * KIB, 16 * MIB), "l2 used: %lld", (long long)m.l2_bytes);
}

Test(topology, an_unreadable_topology_file_is_noted_not_printed, .init = cr_redirect_stderr) {
  clean_env();
  char path[1024];
  fake_topology_at("topo-truncated.xml", path, sizeof path);
  expect_unreadable_noted(path);
  fflush(stderr);
  cr_expect_stderr_eq_str("");
}

/* Paths longer than any text field of txattn_machine_info: topology_file has them whole, and no
   text holds a cut one. */
Test(topology, a_topology_file_under_a_long_path_is_named_whole) {
  char dir[1024], path[2048];
  test_long_path_to(TXATTN_TEST_DATA_DIR, dir, sizeof dir);
  snprintf(path, sizeof path, "%s/topo-normal.xml", dir);
  cr_assert_eq(setenv("HWLOC_XMLFILE", path, 1), 0);
  txattn_machine_info m = machine(NULL);
  test_long_path_remove(dir);
  test_expect_topology_file(&m, path);
  cr_expect(names_file(m.topology_source, path), "source: %s", m.topology_source);
  cr_expect_eq(m.n_cores, 8, "the file was not read: %s", m.topology_source);
}

Test(topology, an_unreadable_file_under_a_long_path_is_named_whole, .init = cr_redirect_stderr) {
  clean_env();
  char dir[1024], path[2048];
  test_long_path_to(TXATTN_TEST_DATA_DIR, dir, sizeof dir);
  snprintf(path, sizeof path, "%s/topo-truncated.xml", dir);
  cr_assert_eq(setenv("HWLOC_XMLFILE", path, 1), 0);
  expect_unreadable_noted(path);
  test_long_path_remove(dir);
}

Test(topology, options_override_each_cache_with_a_note) {
  fake_topology("topo-normal.xml");
  txattn_machine_info m = machine("l1d=64K, l2=2M ,l3=24M");
  cr_expect_eq(m.l1d_bytes, 64 * KIB);
  cr_expect_eq(m.l2_bytes, 2 * MIB);
  cr_expect_eq(m.l3_bytes, 24 * MIB);
  cr_expect_eq(m.hw_l2_bytes, 1280 * KIB, "hw_* stay what hwloc reports");
  cr_expect(strstr(m.cache_notes, "l1d:") && strstr(m.cache_notes, "l2:") &&
                strstr(m.cache_notes, "l3:"),
            "a note for each: %s", m.cache_notes);
  cr_expect(strstr(m.cache_source, "txattn_options.caches") != NULL, "source: %s", m.cache_source);
}

Test(topology, the_environment_overrides_a_subset) {
  fake_topology("topo-normal.xml");
  setenv("TXATTN_CACHES", "l2=2M", 1);
  txattn_machine_info m = machine(NULL);
  cr_expect_eq(m.l2_bytes, 2 * MIB);
  cr_expect_eq(m.l1d_bytes, 48 * KIB);
  cr_expect_eq(m.l3_bytes, 3 * MIB);
  cr_expect(strstr(m.cache_notes, "TXATTN_CACHES") != NULL, "notes: %s", m.cache_notes);
  cr_expect(strstr(m.cache_source, "TXATTN_CACHES") != NULL, "source: %s", m.cache_source);
}

Test(topology, options_beat_the_environment) {
  fake_topology("topo-normal.xml");
  setenv("TXATTN_CACHES", "l2=2M,l3=32M", 1);
  txattn_machine_info m = machine("l2=256K");
  cr_expect_eq(m.l2_bytes, 256 * KIB);
  cr_expect_eq(m.l3_bytes, 3 * MIB, "the environment is not read when the options give caches");
  cr_expect(strstr(m.cache_notes, "TXATTN_CACHES") == NULL, "notes: %s", m.cache_notes);
  m = machine(""); /* "": no override at all */
  cr_expect_eq(m.l2_bytes, 1280 * KIB);
  cr_expect_str_eq(m.cache_notes, "");
}

struct spelling {
  char text[48];
  int64_t l1d, l2, l3; /* 0: the checked value */
};

ParameterizedTestParameters(topology, sizes_are_read_in_every_spelling) {
  static struct spelling s[] = {
      {"L2=1m", 0, 1 * MIB, 0},
      {" l1d = 48KiB , l3=1.5M ", 48 * KIB, 0, 3 * MIB / 2},
      {"l2=1048576", 0, 1 * MIB, 0},
      {"l2=1.25MB,l3=1G", 0, 1280 * KIB, 1024 * MIB},
      {"l1d=32k,l2=2048K,l3=8mib", 32 * KIB, 2 * MIB, 8 * MIB},
  };
  return cr_make_param_array(struct spelling, s, sizeof s / sizeof s[0]);
}

ParameterizedTest(struct spelling *s, topology, sizes_are_read_in_every_spelling) {
  fake_topology("topo-normal.xml");
  txattn_machine_info m = machine(s->text);
  cr_expect_eq(m.l1d_bytes, s->l1d ? s->l1d : 48 * KIB, "\"%s\": l1d %lld", s->text,
               (long long)m.l1d_bytes);
  cr_expect_eq(m.l2_bytes, s->l2 ? s->l2 : 1280 * KIB, "\"%s\": l2 %lld", s->text,
               (long long)m.l2_bytes);
  cr_expect_eq(m.l3_bytes, s->l3 ? s->l3 : 3 * MIB, "\"%s\": l3 %lld", s->text,
               (long long)m.l3_bytes);
}

struct malformed {
  char text[48], item[24]; /* the whole override, and the item the message must quote */
};

ParameterizedTestParameters(topology, malformed_overrides_are_refused_naming_the_item) {
  static struct malformed m[] = {
      {"l2", "\"l2\""},         {"l2=", "\"l2=\""},           {"l2=1Q", "\"l2=1Q\""},
      {"l4=1M", "\"l4=1M\""},   {"l2=1M,l2=2M", "\"l2=2M\""}, {"l2=512", "\"l2=512\""},
      {"l3=2T", "\"l3=2T\""},   {"l2=1M,,l3=8M", "\"\""},     {"l2=-1M", "\"l2=-1M\""},
      {"l2=1.M", "\"l2=1.M\""}, {"l3=2048G", "\"l3=2048G\""}, {"l1d=48K,", "\"\""},
  };
  return cr_make_param_array(struct malformed, m, sizeof m / sizeof m[0]);
}

ParameterizedTest(struct malformed *bad, topology,
                  malformed_overrides_are_refused_naming_the_item) {
  txattn_context *ctx = NULL;
  txattn_status s = try_context(bad->text, &ctx);
  cr_expect_eq(s, TXATTN_E_INVALID, "\"%s\" gave %s", bad->text, txattn_status_name(s));
  cr_expect_null(ctx);
  const char *msg = txattn_last_error();
  cr_expect(strstr(msg, bad->item) != NULL && strstr(msg, "txattn_options.caches") != NULL,
            "\"%s\": the message must name the option and the item %s: %s", bad->text, bad->item,
            msg);
  txattn_context_free(ctx);
}

/* A malformed variable is ignored with a note naming it and the item, as a malformed table is
   (issue 19): contexts are still created, on the detected sizes. */
Test(topology, a_malformed_environment_override_is_ignored_with_a_note) {
  fake_topology("topo-normal.xml");
  setenv("TXATTN_CACHES", "l2=2M,l3=lots", 1);
  txattn_machine_info m = machine(NULL);
  cr_expect_eq(m.l2_bytes, 1280 * KIB, "the whole override is ignored");
  cr_expect_eq(m.l3_bytes, 3 * MIB);
  cr_expect(strstr(m.cache_notes, "TXATTN_CACHES") && strstr(m.cache_notes, "\"l3=lots\"") &&
                strstr(m.cache_notes, "ignored"),
            "notes: %s", m.cache_notes);
  cr_expect(strstr(m.cache_source, "TXATTN_CACHES") == NULL, "source: %s", m.cache_source);
}

/* block_k of a forced tiled kernel for n = 4096, d = 64 under an L2 override, checked against the
   constraints the kernel declares. */
static int64_t tiled_block_k(const char *caches) {
  txattn_context *ctx = context(caches);
  txattn_problem p = {.n_q = 4096, .d_qk = 64};
  txattn_plan *plan = NULL;
  txattn_status s = txattn_plan_create(ctx, &p, "tiled.scalar", &plan);
  cr_assert_eq(s, TXATTN_OK, "tiled.scalar: %s", txattn_last_error());
  int64_t block_k = -1;
  for (size_t i = 0; i < txattn_plan_tunable_count(plan); i++) {
    txattn_tunable_info ti = TXATTN_TUNABLE_INFO_INIT;
    cr_assert_eq(txattn_plan_tunable_info(plan, i, &ti), TXATTN_OK, "%s", txattn_last_error());
    cr_expect(ti.value >= ti.min && ti.value <= ti.max && ti.value % ti.multiple_of == 0,
              "%s=%lld outside [%lld, %lld] step %lld", ti.name, (long long)ti.value,
              (long long)ti.min, (long long)ti.max, (long long)ti.multiple_of);
    if (strcmp(ti.name, "block_k") == 0) block_k = ti.value;
  }
  cr_assert(block_k > 0, "tiled.scalar declares no block_k");
  txattn_plan_free(plan);
  txattn_context_free(ctx);
  return block_k;
}

Test(topology, the_tiled_block_sizes_follow_the_l2) {
  fake_topology("topo-normal.xml"); /* the L1d and L3 the blocks also follow: not this machine's */
  int64_t small = tiled_block_k("l2=64K"), large = tiled_block_k("l2=2M");
  cr_expect_lt(small, large, "block_k with a 64 KiB L2 (%lld) must be below that with 2 MiB (%lld)",
               (long long)small, (long long)large);
}

Test(topology, the_tunable_getters_check_their_arguments) {
  fake_topology("topo-normal.xml");
  txattn_context *ctx = context(NULL);
  txattn_problem p = {.n_q = 64, .d_qk = 16};
  txattn_plan *plan = NULL;
  cr_assert_eq(txattn_plan_create(ctx, &p, "tiled.scalar", &plan), TXATTN_OK);
  size_t n = txattn_plan_tunable_count(plan);
  cr_assert_eq(n, 2);
  const char *name = NULL;
  int64_t v = 0;
  cr_expect_eq(txattn_plan_tunable_get(plan, 0, &name, &v), TXATTN_OK);
  cr_expect_str_eq(name, "block_q");
  cr_expect(v > 0);
  cr_expect_eq(txattn_plan_tunable_get(plan, 1, NULL, NULL), TXATTN_OK);
  cr_expect_eq(txattn_plan_tunable_get(plan, n, &name, &v), TXATTN_E_INVALID);
  cr_expect(text_mentions(txattn_last_error(), "index", NULL), "%s", txattn_last_error());
  cr_expect_eq(txattn_plan_tunable_get(NULL, 0, &name, &v), TXATTN_E_INVALID);
  cr_expect_eq(txattn_plan_tunable_info(plan, 0, NULL), TXATTN_E_INVALID);
  cr_expect_eq(txattn_plan_tunable_count(NULL), 0);
  txattn_plan_free(plan);
  plan = NULL;
  cr_assert_eq(txattn_plan_create(ctx, &p, "naive.scalar", &plan), TXATTN_OK);
  cr_expect_eq(txattn_plan_tunable_count(plan), 0, "naive.scalar declares no tunables");
  txattn_plan_free(plan);
  txattn_machine_info m = TXATTN_MACHINE_INFO_INIT;
  cr_expect_eq(txattn_context_machine(NULL, &m), TXATTN_E_INVALID);
  cr_expect_eq(txattn_context_machine(ctx, NULL), TXATTN_E_INVALID);
  txattn_context_free(ctx);
}

/* This machine, whatever it is: every used size plausible or noted, the scalar ISA always there,
   and the CPU named where the architecture has a way to ask. */
Test(topology, this_machine_is_described) {
  txattn_machine_info m = machine(NULL);
  cr_expect(m.isa_mask & (1u << TXATTN_ISA_SCALAR));
  cr_expect(m.n_cores >= 1 && m.n_pus >= m.n_cores && m.n_numa >= 1, "%d cores %d PUs %d NUMA",
            m.n_cores, m.n_pus, m.n_numa);
  cr_expect(m.l2_bytes > m.l1d_bytes && m.l3_bytes >= m.l2_bytes / 2,
            "l1d %lld l2 %lld l3 %lld: %s", (long long)m.l1d_bytes, (long long)m.l2_bytes,
            (long long)m.l3_bytes, m.cache_notes);
  cr_expect(m.cache_source[0] != '\0');
#if defined(__x86_64__)
  cr_expect(m.vendor[0] != '\0' && m.family > 0, "vendor \"%s\" family %d", m.vendor, m.family);
  __builtin_cpu_init();
  cr_expect_eq((m.isa_mask >> TXATTN_ISA_AVX2) & 1u,
               (unsigned)(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")));
#endif
}
