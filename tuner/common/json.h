/* SPDX-License-Identifier: MIT */
/* A streaming JSON writer: commas and string escaping are handled here so commands only say what
   they emit. No dependency beyond stdio. */
#ifndef TXTUNE_JSON_H
#define TXTUNE_JSON_H

#include <stdint.h>
#include <stdio.h>

#define TX_JSON_MAX_DEPTH 16

typedef struct tx_json {
  FILE *f;
  int depth;
  int has_items[TX_JSON_MAX_DEPTH]; /* per open container: a comma is due before the next item */
  int after_key;                    /* a key was just written: the value follows without a comma */
} tx_json;

void tx_json_init(tx_json *j, FILE *f);
void tx_json_begin_object(tx_json *j);
void tx_json_end_object(tx_json *j);
void tx_json_begin_array(tx_json *j);
void tx_json_end_array(tx_json *j);
void tx_json_key(tx_json *j, const char *key);
void tx_json_string(tx_json *j, const char *s); /* NULL writes null */
void tx_json_int(tx_json *j, int64_t v);
void tx_json_double(tx_json *j, double v); /* NaN and infinities have no JSON form: null */
void tx_json_bool(tx_json *j, int v);
void tx_json_null(tx_json *j);
/* Ends the document with a newline. */
void tx_json_finish(tx_json *j);

/* key + value in one call, for the common flat fields */
void tx_json_kv_string(tx_json *j, const char *key, const char *s);
void tx_json_kv_int(tx_json *j, const char *key, int64_t v);
void tx_json_kv_double(tx_json *j, const char *key, double v);
void tx_json_kv_bool(tx_json *j, const char *key, int v);
/* key and the opening of its value, an object or an array */
void tx_json_kv_object(tx_json *j, const char *key);
void tx_json_kv_array(tx_json *j, const char *key);

#endif
