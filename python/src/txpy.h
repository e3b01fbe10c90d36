/* SPDX-License-Identifier: MIT */
/* The extension module txattn._txattn: what its files share. module.c: the types and errors;
 * api.c: the public calls' arguments, the default context and plans' calls; calls.c: a call's
 * mechanics; kinds.c: NumPy and torch objects; views.c: tensors as the extension sees them.
 * Every library call that computes or loads runs with the GIL released (PyEval_SaveThread), after
 * every Python object it needs was read: other Python threads run meanwhile, and may call in too. */
#ifndef TXPY_TXPY_H
#define TXPY_TXPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <txattn/txattn.h>

#include "views.h"

/* A txattn_context (txattn.Context derives from it); plans keep a reference to it, so it outlives
   them. */
typedef struct txpy_context {
  PyObject_HEAD txattn_context *ctx;
} txpy_context;

/* A txattn_plan, the problem it was made for (resolved: every default filled in) and the lengths
   its calls default to. Called through vectorcall. */
typedef struct txpy_plan {
  PyObject_HEAD txattn_plan *plan;
  vectorcallfunc vectorcall;
  PyObject *context;           /* the txattn.Context it was made in */
  PyObject *q_lens, *kv_lens;  /* NULL or the lengths given to Context.plan */
  float *alibi_slopes, *sinks; /* NULL or heads_q floats given to Context.plan (owned) */
  PyObject *attn_mask;         /* NULL or the mask tensor given to Context.plan */
  /* NULL or what Context.plan was given for its calls: a block table, q_offsets, fp8 scales */
  PyObject *block_table, *q_offsets, *k_scale, *v_scale;
  txattn_problem problem;
} txpy_plan;

extern PyTypeObject txpy_context_type, txpy_plan_type;

/* Raises the txattn.Error subclass of status with txattn_last_error()'s message (read by the
   caller on the thread that failed and passed as message). Returns NULL. */
PyObject *txpy_raise_status(txattn_status status, const char *message);
/* Module init: creates txattn.Error and its subclasses and adds them to m; 0 or -1. */
int txpy_errors_init(PyObject *m);

/* ---- kinds.c: NumPy and torch ---------------------------------------------------------------- */

int txpy_kinds_init(void);
/* 1 if x is a torch tensor, 0 if not (torch not imported included), -1 on error */
int txpy_is_torch(PyObject *x);
/* torch.get_num_threads() if torch is imported, else -1 */
int txpy_torch_threads(void);
/* Imports obj as txpy_view_import does, a torch tensor through DLPack after refusing one that
   requires grad in grad mode; *torch (if not NULL) says whether it was a torch tensor. */
int txpy_import(PyObject *obj, const char *name, int flags, txpy_view *v, int *torch);
/* A new uninitialised contiguous array of the kind, or NULL: numpy.empty; for torch
   torch.empty_like(like) where like_same says like (q's tensor, contiguous) has the shape and type,
   else like.new_empty where it has the type, else torch.empty (cheapest first) */
PyObject *txpy_alloc(int torch, PyObject *like, int like_same, int ndim, const int64_t *shape,
                     txattn_dtype dtype);
/* Imports a result txpy_alloc made: a torch tensor by its data pointer alone (its shape, type
   and strides are what was asked for) */
int txpy_import_new(PyObject *obj, int torch, const char *name, int ndim, const int64_t *shape,
                    txattn_dtype dtype, txpy_view *v);
/* Fills a contiguous view with zeros, or (minus_inf, float32) with -inf */
void txpy_fill(const txpy_view *v, int minus_inf);

/* ---- calls.c: a call ------------------------------------------------------------------------- */

enum { TXPY_OP_ATTENTION, TXPY_OP_EXECUTE, TXPY_OP_REFERENCE, TXPY_OP_BOUND, TXPY_OP_PLAN };

typedef struct txpy_call {
  int op;
  const char *names[3]; /* q, k, v as the caller named them, for messages */
  txpy_view q, k, v, o, lse;
  int have_o, have_lse, ragged, torch; /* torch: q is a torch tensor (results are) */
  /* packed (q_offsets given): q [rows, heads_q, d_qk], o [rows, heads_q, d_v], lse [rows, heads_q];
     q_offsets batch + 1 checked prefix sums (owned) */
  int packed;
  int64_t *q_offsets;
  /* attn_mask (have_mask): boolean or floating, broadcast to [batch, heads_q, n_q, n_kv] through
     mask_layout (stride 0 where its size is 1 or it has no such dimension) */
  txpy_view mask;
  int have_mask;
  txattn_mask_layout mask_layout;
  int64_t *q_lens, *kv_lens;
  float *alibi_slopes, *sinks;         /* owned: heads_q floats read from the caller's objects */
  const float *use_slopes, *use_sinks; /* what the call passes (these, or a plan's) */
  /* paged (block_table given): k and v are page pools, [n_pages, heads_kv, P, dim]; table the
     block table (owned; NULL for a plan made from the table's shape) */
  int paged;
  int32_t *table;
  /* kv_dtype given (>= 0): k and v are uint8 arrays of that 8-bit type (txpy_view_kv8), with
     k_scale / v_scale (owned, heads_kv floats) for fp8 */
  int kv_dtype;
  float *k_scale, *v_scale;
  txattn_problem p;
  PyObject *o_obj, *lse_obj; /* the results' objects (references held) */
  PyObject *q_obj;           /* q as given (borrowed: the caller holds it) */
} txpy_call;

/* What a call asks beyond its tensors, spelt out: mask TXATTN_MASK_*, window sides >= 0 or
   TXATTN_UNBOUNDED, scale 0 for 1/sqrt(d_qk), lengths NULL/None for dense (Py_True: a ragged
   plan's lengths come with each call), kernel NULL for the dispatcher's, lse for the bound and
   plans (the others take it from the lse output). The score modifiers: softcap 0 for none,
   sink_keys >= 0, alibi_slopes and sinks NULL/None for none, else objects of heads_q numbers
   (Py_True for a plan: given with each call). For a plan, block_table may be a table's shape
   (batch, max_pages), q_offsets and the fp8 scales Py_True: given with each call. */
typedef struct txpy_opts {
  int mask;
  int64_t window_left, window_right;
  float scale;
  PyObject *q_lens, *kv_lens;
  PyObject *block_table; /* NULL: k and v are [batch, heads_kv, n_kv, dim] */
  PyObject *q_offsets;   /* NULL: q is [batch, heads_q, n_q, d_qk]; else cu_seqlens */
  const char *kernel;
  int lse;
  float softcap;
  int64_t sink_keys;
  PyObject *alibi_slopes, *sinks;
  PyObject *attn_mask;         /* NULL or None: no mask tensor */
  PyObject *k_scale, *v_scale; /* NULL or None: none (fp8 k and v need them) */
} txpy_opts;

void txpy_call_init(txpy_call *c, int op);
void txpy_call_release(txpy_call *c);
/* Imports q, k, v (specs allowed for plans; k and v uint8 caches of c->kv_dtype when it is set);
   0 or -1 */
int txpy_call_inputs(txpy_call *c, PyObject *q, PyObject *k, PyObject *v);
/* The outputs: out (o, or (o, lse) with want_lse) imported, or new ones of q's kind and type
   o_dtype (-1: q's), zero and -inf where a ragged call leaves rows unwritten; 0 or -1 */
int txpy_call_outputs(txpy_call *c, PyObject *out, int want_lse, int o_dtype, int ragged);
/* Checks everything against everything and runs the op on target (a Context, a Plan or None):
   None, the bound (TXPY_OP_BOUND) or a new Plan (TXPY_OP_PLAN); NULL with an exception. */
PyObject *txpy_call_run(txpy_call *c, PyObject *target, const txpy_opts *o);
/* o, or (o, lse) */
PyObject *txpy_call_result(txpy_call *c, int want_lse);
/* kv_lens / q_lens as batch ints in 0..max (Py_True for plans: ragged, lengths later) */
int txpy_parse_lens(txpy_call *c, const txpy_view *ref, PyObject *obj, const char *name,
                    int64_t max, const char *max_name, int64_t **out);
/* obj (a 1-D NumPy array or torch tensor of any real type, or a sequence of numbers) as heads
   float32s in a new malloc'd *out; minus_inf: -inf is allowed (sinks), else every one is finite.
   ref (q, or the merge's out) names the heads in messages. 0, or -1 with nothing allocated. */
int txpy_head_floats(PyObject *obj, const char *name, int64_t heads, const txpy_view *ref,
                     int minus_inf, float **out);
int txpy_need_ndim(const txpy_view *v, int ndim, const char *layout);
PyObject *txpy_value_error(const char *fmt, ...);
const char *txpy_dtype_str(txattn_dtype d);
/* The plan's problem as a dict, for Plan.problem */
PyObject *txpy_problem_dict(const txattn_problem *p);

/* ---- api.c and calls.c: the module's functions ----------------------------------------------- */

PyObject *txpy_attention(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw);
PyObject *txpy_reference(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw);
PyObject *txpy_error_bound(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw);
PyObject *txpy_default_context(PyObject *self, PyObject *unused);
PyObject *txpy_set_default_context(PyObject *self, PyObject *context);
PyObject *txpy_register(PyObject *self, PyObject *cls);
PyObject *txpy_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *txpy_merge(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *txpy_spec(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *txpy_alibi_slopes(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *txpy_convert(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *txpy_convert_scale(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *txpy_plan_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                               PyObject *kwnames);
int txpy_api_init(void);
extern const char txpy_attention_doc[], txpy_reference_doc[], txpy_error_bound_doc[],
    txpy_plan_call_doc[];

#endif
