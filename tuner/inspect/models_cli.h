/* SPDX-License-Identifier: MIT */
/* `txtune check --model NAME` and `txtune bench --model NAME`: every attention layer kind of one
   model of the catalogue (txattn_model_*), checked or timed (cmd_models.c). */
#ifndef TXTUNE_MODELS_CLI_H
#define TXTUNE_MODELS_CLI_H

/* Whether argv (argv[0] the command) asks for a model run: it has --model. */
int tx_model_requested(int argc, char **argv);
/* Runs `cmd` ("check" or "bench") over the model argv names; returns the exit status. */
int tx_model_run(const char *cmd, int argc, char **argv);

#endif
