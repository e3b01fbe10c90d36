/* SPDX-License-Identifier: MIT */
/* txtune models, the catalogue of real models, and `txtune check --model NAME` and `txtune bench
   --model NAME`: every attention layer kind of one model (txattn_model_*), checked or timed
   (cmd_models.c). */
#ifndef TXTUNE_CMD_MODELS_H
#define TXTUNE_CMD_MODELS_H

/* txtune models: the catalogue. */
int tx_cmd_models(int argc, char **argv);
/* Whether argv (argv[0] the command) asks for a model run: it has --model. */
int tx_model_requested(int argc, char **argv);
/* Runs `cmd` ("check" or "bench") over the model argv names; returns the exit status. */
int tx_model_run(const char *cmd, int argc, char **argv);

#endif
