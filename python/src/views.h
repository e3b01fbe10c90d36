/* SPDX-License-Identifier: MIT */
/* Tensors handed in from Python, as the extension sees them: a data pointer, an element type,
 * a shape and strides in elements, from the buffer protocol (NumPy) or DLPack (any __dlpack__, and
 * torch tensors kinds.c cannot read through their attributes), held until released. Nothing here
 * calls the library. */
#ifndef TXPY_VIEWS_H
#define TXPY_VIEWS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include <txattn/txattn.h>

#define TXPY_MAX_DIMS 8

/* The DLPack ABI (dlpack.h, v0.x: what torch 1.13 and NumPy 1.22+ export), defined here rather
   than vendored: these structs are a stable ABI, and only these fields are read. */
typedef struct {
  int32_t device_type; /* kDLCPU = 1 */
  int32_t device_id;
} txpy_dl_device;
typedef struct {
  uint8_t code; /* kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4 */
  uint8_t bits;
  uint16_t lanes;
} txpy_dl_dtype;
typedef struct {
  void *data;
  txpy_dl_device device;
  int32_t ndim;
  txpy_dl_dtype dtype;
  int64_t *shape;
  int64_t *strides; /* in elements; NULL: compact row-major */
  uint64_t byte_offset;
} txpy_dl_tensor;
typedef struct txpy_dl_managed {
  txpy_dl_tensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(struct txpy_dl_managed *self);
} txpy_dl_managed;

typedef struct txpy_view {
  const char *name; /* the Python argument, for messages: "q", "out", "outputs[2]" */
  char *data;       /* element (0, ..., 0); NULL for a shape-only spec or an empty tensor */
  txattn_dtype dtype;
  int ndim;
  int64_t shape[TXPY_MAX_DIMS];
  int64_t strides[TXPY_MAX_DIMS]; /* in elements, each >= 0 */
  int spec;                       /* 1: a (shape, dtype) spec with no data (plans only) */
  /* what keeps the data alive until txpy_view_release */
  Py_buffer buffer;
  int has_buffer;
  txpy_dl_managed *managed;
} txpy_view;

/* TXPY_ROWS: a tensor of rows without an element dimension (lse): its last stride may be any.
   TXPY_MASK: an attention mask: booleans too (TXPY_DTYPE_BOOL), and any last stride. */
/* TXPY_KV8: an 8-bit K or V cache: uint8 too (TXPY_DTYPE_U8), which txpy_view_kv8 reads as the
   cache's type. */
enum {
  TXPY_READ = 0,
  TXPY_WRITE = 1,
  TXPY_SPEC_OK = 2,
  TXPY_ROWS = 4,
  TXPY_MASK = 8,
  TXPY_KV8 = 16
};
/* A view's dtype for a boolean mask (one byte per element): no txattn_dtype. */
#define TXPY_DTYPE_BOOL ((txattn_dtype)15)
/* A view's dtype for the bytes of an 8-bit cache, before txpy_view_kv8 */
#define TXPY_DTYPE_U8 ((txattn_dtype)14)
/* Bytes of one element of v (1 for a boolean mask) */
size_t txpy_elem_size(const txpy_view *v);

/* Imports obj (an object with the buffer protocol, a "dltensor" capsule, an object with
   __dlpack__, or with TXPY_SPEC_OK a (shape tuple, dtype name) pair) as v, checking what every
   use needs: a CPU tensor of f32, f16 or bf16, strides >= 0 and whole elements, the last dimension
   contiguous, writable for TXPY_WRITE. Returns 0, or -1 with a Python exception set and nothing
   held. */
int txpy_view_import(PyObject *obj, const char *name, int flags, txpy_view *v);
void txpy_view_release(txpy_view *v);
/* A uint8 view (TXPY_KV8) as the 8-bit or 4-bit cache of type t: e4m3 and e5m2 one value a
   byte; q8_0 (q4_0) rows of 34-byte (18-byte) blocks, its last dimension's bytes (a multiple of
   the block's) becoming 32 values a block and every other stride (a multiple of the block's
   bytes) counted in values. 0, or -1 and ValueError. */
int txpy_view_kv8(txpy_view *v, txattn_dtype t);
/* The checks txpy_view_import makes of every tensor once it knows its pointer and strides: the
   last dimension contiguous (unless TXPY_ROWS) and the data aligned; 0, or -1 and ValueError. */
int txpy_view_check(const txpy_view *v, const char *name, int flags);

/* "(2, 8, 128, 64)" into buf */
const char *txpy_shape_str(const txpy_view *v, char *buf, size_t size);
/* The element count (0 for an empty tensor) */
int64_t txpy_view_count(const txpy_view *v);
/* The layout of dimensions 0..2 (batch, head, row) for the library: sizes of 1 take a
   stride that makes the layout never all zero unless a dimension of more than one index repeats
   (stride 0), which the library would read as contiguous: that is refused (-1, ValueError). */
int txpy_view_layout(const txpy_view *v, txattn_layout *out);
/* The same for a 3-D tensor of rows, [batch][heads][rows] (lse): its rows take the place of a
   4-D tensor's rows of one element. */
int txpy_rows_layout(const txpy_view *v, txattn_layout *out);
/* Whether the bytes two views address intersect (as the library judges overlap) */
int txpy_views_overlap(const txpy_view *a, const txpy_view *b);

#endif
