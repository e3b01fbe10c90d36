/* SPDX-License-Identifier: MIT */
/* txtune: the command-line face of libtxattn. main() only dispatches; each subcommand lives in its
   own cmd_<name>.c (in inspect/, profile/ or quality/; bench and plot in the lab's lab.c) and
   parses its own options. */
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "cmd_check.h"
#include "cmd_compare.h"
#include "cmd_explain.h"
#include "cmd_list.h"
#include "cmd_models.h"
#include "cmd_profile.h"
#include "cmd_show.h"
#include "cmd_topo.h"
#include "cmd_validate.h"
#include "lab.h"
#include "txattn/plugin.h"
#include "txattn/txattn.h"

typedef struct tx_command {
  const char *name, *summary;
  int (*run)(int argc, char **argv);
} tx_command;

static const tx_command commands[] = {
    {"list", "kernels and plugins found, and why any cannot be used", tx_cmd_list},
    {"check", "every usable kernel against the fp64 reference on a battery of shapes",
     tx_cmd_check},
    {"bench", "time every applicable kernel on one shape, or a sweep over n and mask kinds",
     tx_cmd_bench},
    {"topo", "the machine's caches as used, and the tile sizes each kernel derives from them",
     tx_cmd_topo},
    {"show", "the dispatch table: who wins where, and whether it fits this machine", tx_cmd_show},
    {"explain", "which kernel runs one shape and why (table region, interpolation, estimate)",
     tx_cmd_explain},
    {"profile",
     "measure the kernels on this machine and write the dispatch table libtxattn follows",
     tx_cmd_profile},
    {"validate", "the table's regret: its pick against the fastest kernel on shapes off its grid",
     tx_cmd_validate},
    {"plot",
     "time against n per kernel from a dispatch table or a bench sweep, crossovers marked (SVG)",
     tx_cmd_plot},
    {"compare", "two tables point by point: do their winners differ by more than the noise?",
     tx_cmd_compare},
    {"models", "the catalogue of real models and their attention layers (check/bench --model NAME)",
     tx_cmd_models},
};
enum { N_COMMANDS = sizeof commands / sizeof commands[0] };

static void usage(FILE *f) {
  fprintf(f, "Usage: txtune <command> [options]\n"
             "       txtune help [<command>]    (or txtune <command> --help)\n"
             "       txtune --version\n"
             "\nExact scaled-dot-product attention: inspect, verify and time the kernels of "
             "libtxattn.\n\nCommands:\n");
  int width = 0; /* the longest name, so that every summary stands apart from its name */
  for (int i = 0; i < N_COMMANDS; i++)
    if ((int)strlen(commands[i].name) > width) width = (int)strlen(commands[i].name);
  for (int i = 0; i < N_COMMANDS; i++)
    fprintf(f, "  %-*s  %s\n", width, commands[i].name, commands[i].summary);
  fprintf(f, "\nExit status: 0 ok, 1 a check or run failed, 2 usage error.\n");
}

static void version(void) {
  printf("txtune %s (libtxattn %s at run time, plugin ABI %u)\n", TXATTN_VERSION_STRING,
         txattn_version_string(), TXATTN_PLUGIN_ABI_VERSION);
}

static const tx_command *find_command(const char *name) {
  for (int i = 0; i < N_COMMANDS; i++)
    if (strcmp(commands[i].name, name) == 0) return &commands[i];
  return NULL;
}

/* "txtune: unknown command 'bnech' (did you mean 'bench'?)" and the usage, on stderr. */
static int unknown(const char *what, const char *word) {
  const char *names[N_COMMANDS + 1];
  char near[160];
  if (word[0] == '-') { /* the options of txtune itself */
    static const char *const options[] = {"help", "version"};
    tx_did_you_mean(word + (word[1] == '-' ? 2 : 1), options, 2, "--", near, sizeof near);
  } else {
    for (int i = 0; i < N_COMMANDS; i++) names[i] = commands[i].name;
    names[N_COMMANDS] = "help";
    tx_did_you_mean(word, names, N_COMMANDS + 1, "", near, sizeof near);
  }
  fprintf(stderr, "%s: unknown %s '%s'%s\n", what, word[0] == '-' ? "option" : "command", word,
          near);
  usage(stderr);
  return TX_EXIT_USAGE;
}

/* txtune help: the usage; txtune help COMMAND: that command's --help. */
static int help(int argc, char **argv) {
  if (argc == 2) {
    usage(stdout);
    return TX_EXIT_OK;
  }
  if (argc > 3) {
    fprintf(stderr, "txtune help: one command at most, got '%s' and '%s'\n", argv[2], argv[3]);
    usage(stderr);
    return TX_EXIT_USAGE;
  }
  if (strcmp(argv[2], "help") == 0) {
    usage(stdout);
    return TX_EXIT_OK;
  }
  const tx_command *c = find_command(argv[2]);
  if (!c) return unknown("txtune help", argv[2]);
  char *help_argv[] = {argv[2], "--help", NULL};
  return c->run(2, help_argv);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return TX_EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0) {
    usage(stdout);
    return TX_EXIT_OK;
  }
  if (strcmp(cmd, "-V") == 0 || strcmp(cmd, "--version") == 0) {
    version();
    return TX_EXIT_OK;
  }
  if (strcmp(cmd, "help") == 0) return help(argc, argv);
  const tx_command *c = find_command(cmd);
  if (!c) return unknown("txtune", cmd);
  return c->run(argc - 1, argv + 1);
}
