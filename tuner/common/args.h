/* SPDX-License-Identifier: MIT */
/* Command-line options of txtune subcommands: one table per subcommand drives both parsing and
   --help, so the help text can never disagree with what is accepted. */
#ifndef TXTUNE_ARGS_H
#define TXTUNE_ARGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum tx_opt_kind {
  TX_OPT_FLAG,   /* int: set to 1 */
  TX_OPT_INT,    /* int64_t within [min, max] */
  TX_OPT_BOUND,  /* int64_t within [min, max], or "inf"/"unbounded" -> TXATTN_UNBOUNDED */
  TX_OPT_DOUBLE, /* double within [dmin, dmax] */
  TX_OPT_STRING, /* const char *: points into argv */
  TX_OPT_LIST,   /* tx_strlist: repeatable, each value may be a comma-separated list */
  TX_OPT_CHOICE, /* int: index into choices */
  TX_OPT_REPEAT, /* tx_strlist: repeatable, each value one item (commas and all) */
} tx_opt_kind;

#define TX_LIST_MAX 64
typedef struct tx_strlist {
  char *items[TX_LIST_MAX];
  size_t n;
} tx_strlist;
void tx_strlist_free(tx_strlist *l);

typedef struct tx_opt {
  const char *name; /* the long name without "--" */
  tx_opt_kind kind;
  void *dest;
  const char *metavar; /* shown in --help: "N" */
  const char *help;
  int64_t min, max;           /* TX_OPT_INT, TX_OPT_BOUND */
  double dmin, dmax;          /* TX_OPT_DOUBLE */
  const char *const *choices; /* TX_OPT_CHOICE, NULL-terminated */
} tx_opt;

/* Typed constructors: the compiler checks that each destination has the type its kind writes. */
tx_opt tx_opt_flag(const char *name, int *dest, const char *help);
tx_opt tx_opt_int(const char *name, int64_t *dest, const char *metavar, const char *help,
                  int64_t min, int64_t max);
tx_opt tx_opt_bound(const char *name, int64_t *dest, const char *metavar, const char *help,
                    int64_t min, int64_t max);
tx_opt tx_opt_double(const char *name, double *dest, const char *metavar, const char *help,
                     double min, double max);
tx_opt tx_opt_string(const char *name, const char **dest, const char *metavar, const char *help);
tx_opt tx_opt_list(const char *name, tx_strlist *dest, const char *metavar, const char *help);
tx_opt tx_opt_repeat(const char *name, tx_strlist *dest, const char *metavar, const char *help);
tx_opt tx_opt_choice(const char *name, int *dest, const char *metavar, const char *help,
                     const char *const *choices);

typedef struct tx_opt_group {
  const char *title; /* "Problem", "Output" */
  const tx_opt *opts;
  size_t n_opts;
} tx_opt_group;

typedef struct tx_cmd_spec {
  const char *name;  /* "bench" */
  const char *usage; /* what follows "txtune bench " in the usage line */
  const char *about; /* printed by --help between the usage line and the options */
  const tx_opt_group *groups;
  size_t n_groups;
} tx_cmd_spec;

#define TX_EXIT_OK    0
#define TX_EXIT_FAIL  1
#define TX_EXIT_USAGE 2

/* argv[0] is the subcommand name; options start at argv[1]; -o FILE stands for --output FILE in a
   command that has --output. Returns -1 when the command should run,
   else its exit status: TX_EXIT_OK after printing --help, TX_EXIT_USAGE after printing an error and
   the usage to stderr. */
int tx_args_parse_cmd(const tx_cmd_spec *spec, int argc, char **argv);
/* strtoll without its traps: no empty string, no leading blanks or '+', no "-0", no trailing junk,
   no silent saturation. Returns 1 with *out, else 0. What every integer option is parsed with. */
int tx_parse_int(const char *s, int64_t *out);
/* " (did you mean 'bench'?)", or " (did you mean '--kernel' or '--kernels'?)": the names[0..n)
   nearest to word by edit distance (insertions, deletions, substitutions and swaps of neighbours),
   each prefixed by `prefix`, if they are close enough to be a typo of it (one edit in a word of up
   to four letters, two up to eight, three beyond); "" when none is. */
void tx_did_you_mean(const char *word, const char *const *names, size_t n, const char *prefix,
                     char *buf, size_t size);
/* For errors found after parsing (conflicting options): prints them like a parse error, returns 2.
 */
int tx_args_usage_error(const tx_cmd_spec *spec, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
