/* SPDX-License-Identifier: MIT */
/* Fuzz target: txtune's shape options (tuner/common/args.c and problem_cli.c, linked as source).
   The input is split at newlines and NULs into argv words after a command name; the words are
   parsed as the problem options every shape-taking subcommand has (plus an output, a list and a
   flag option, as commands add), resolved into a txattn_problem and formatted back. The words
   alone also go through tx_mask_parse and tx_dtypes_parse, whose result must format to a text
   that parses to the same types. A crash, a sanitizer report or a broken round trip aborts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_input.h"
#include "problem_cli.h"

#define MAX_WORDS 64

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  /* usage errors and --help go to stdio's stderr and stdout: silence them (findings are written
     to fd 2 with dprintf, as the sanitizers write theirs) */
  FILE *null = fopen("/dev/null", "w");
  if (null) stderr = stdout = null;
  return 0;
}

static void check_dtypes(const char *word) {
  tx_dtypes d;
  if (!tx_dtypes_parse(word, &d)) return;
  char text[64];
  int w = tx_dtypes_format(&d, text, sizeof text);
  tx_dtypes again;
  if (w <= 0 || (size_t)w >= sizeof text || !tx_dtypes_parse(text, &again) ||
      memcmp(&d, &again, sizeof d) != 0) {
    dprintf(2, "--dtype \"%s\" formats to \"%s\", which does not parse back\n", word, text);
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  char *argv[MAX_WORDS + 2];
  int argc = 0;
  argv[argc++] = "shape";
  for (size_t i = 0, start = 0; i <= size && argc <= MAX_WORDS; i++) {
    if (i == size || text[i] == '\n' || text[i] == '\0') {
      text[i] = '\0';
      argv[argc++] = text + start;
      start = i + 1;
    }
  }
  argv[argc] = NULL;

  for (int i = 1; i < argc; i++) {
    txattn_mask m;
    if (tx_mask_parse(argv[i], &m) && strcmp(txattn_mask_name(m), argv[i]) != 0) {
      dprintf(2, "mask \"%s\" parses to %s\n", argv[i], txattn_mask_name(m));
      abort();
    }
    check_dtypes(argv[i]);
  }

  tx_problem_args a;
  tx_problem_args_init(&a);
  tx_opt prob_opts[TX_PROBLEM_N_OPTS];
  tx_problem_opts(&a, prob_opts);
  const char *output = NULL;
  tx_strlist kernels = {0};
  int quick = 0;
  tx_opt other_opts[3] = {
      tx_opt_string("output", &output, "FILE", "where to write"),
      tx_opt_list("kernel", &kernels, "NAME", "kernels"),
      tx_opt_flag("quick", &quick, "fewer"),
  };
  tx_opt_group groups[2] = {{"Problem", prob_opts, TX_PROBLEM_N_OPTS}, {"Other", other_opts, 3}};
  tx_cmd_spec spec = {"shape", "--n N --d D [options]", "Fuzzed.", groups, 2};
  int rc = tx_args_parse_cmd(&spec, argc, argv);
  if (rc == -1) {
    txattn_problem p = TXATTN_PROBLEM_INIT;
    if (tx_problem_from_args(&spec, &a, &p) == 0) {
      char line[512];
      int w = tx_problem_format(&p, line, sizeof line);
      if (w < 0 || (size_t)w >= sizeof line) {
        dprintf(2, "tx_problem_format returned %d\n", w);
        abort();
      }
      txattn_problem r = TXATTN_PROBLEM_INIT;
      if (txattn_problem_resolve(&p, &r) == TXATTN_OK && txattn_problem_visible_pairs(&r) < 0) {
        dprintf(2, "%s: resolved, but visible pairs < 0\n", line);
        abort();
      }
    }
  } else if (rc != TX_EXIT_OK && rc != TX_EXIT_USAGE) {
    dprintf(2, "tx_args_parse_cmd returned %d\n", rc);
    abort();
  }
  tx_strlist_free(&kernels);
  free(text);
  return 0;
}
