/* SPDX-License-Identifier: MIT */
/* The public calls, in C because a call's overhead is the point: txattn.attention, reference,
 * error_bound and a Plan's call parse their arguments here (vectorcall, keywords matched to
 * interned names) and run through calls.c; the default context is kept here, one per thread
 * count. txattn/__init__.py re-exports them; their docstrings live here. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "txpy.h"

/* ---- arguments ------------------------------------------------------------------------------- */

enum {
  A_Q,
  A_K,
  A_V,
  A_CAUSAL,
  A_WINDOW,
  A_SCALE,
  A_KV_LENS,
  A_Q_LENS,
  A_RETURN_LSE,
  A_OUT,
  A_KERNEL,
  A_CONTEXT,
  A_OUT_DTYPE,
  A_ATTN_MASK,
  A_SOFTCAP,
  A_ALIBI_SLOPES,
  A_SINKS,
  A_SINK_KEYS,
  A_BLOCK_TABLE,
  A_Q_OFFSETS,
  A_KV_DTYPE,
  A_K_SCALE,
  A_V_SCALE,
  A_COUNT
};
static const char *const arg_names[A_COUNT] = {
    "q",           "k",         "v",          "causal",       "window", "scale",
    "kv_lens",     "q_lens",    "return_lse", "out",          "kernel", "context",
    "out_dtype",   "attn_mask", "softcap",    "alibi_slopes", "sinks",  "sink_keys",
    "block_table", "q_offsets", "kv_dtype",   "k_scale",      "v_scale"};
static PyObject *arg_strs[A_COUNT];

/* Which arguments each function takes (bits of A_*) */
#define BIT(a) (1u << (a))
#define COMMON                                                                                     \
  (BIT(A_Q) | BIT(A_K) | BIT(A_V) | BIT(A_CAUSAL) | BIT(A_WINDOW) | BIT(A_SCALE) |                 \
   BIT(A_KV_LENS) | BIT(A_Q_LENS) | BIT(A_RETURN_LSE) | BIT(A_OUT) | BIT(A_ATTN_MASK) |            \
   BIT(A_SOFTCAP) | BIT(A_ALIBI_SLOPES) | BIT(A_SINKS) | BIT(A_SINK_KEYS) | BIT(A_BLOCK_TABLE) |   \
   BIT(A_Q_OFFSETS) | BIT(A_KV_DTYPE) | BIT(A_K_SCALE) | BIT(A_V_SCALE))
static const unsigned takes_attention = COMMON | BIT(A_KERNEL) | BIT(A_CONTEXT);
static const unsigned takes_reference = COMMON;
static const unsigned takes_bound = COMMON | BIT(A_OUT_DTYPE);
static const unsigned takes_plan_call = BIT(A_Q) | BIT(A_K) | BIT(A_V) | BIT(A_Q_LENS) |
                                        BIT(A_KV_LENS) | BIT(A_OUT) | BIT(A_ALIBI_SLOPES) |
                                        BIT(A_SINKS) | BIT(A_ATTN_MASK) | BIT(A_BLOCK_TABLE) |
                                        BIT(A_Q_OFFSETS) | BIT(A_K_SCALE) | BIT(A_V_SCALE);

/* q, k, v positional (or by name), the rest by keyword: values[a] is NULL where not given. */
static int parse(const char *fn, unsigned takes, PyObject *const *args, Py_ssize_t nargs,
                 PyObject *kwnames, PyObject **values) {
  memset(values, 0, sizeof(PyObject *) * A_COUNT);
  if (nargs > 3) {
    PyErr_Format(PyExc_TypeError, "%s() takes 3 positional arguments (q, k, v) but %zd were given",
                 fn, nargs);
    return -1;
  }
  for (Py_ssize_t i = 0; i < nargs; i++) values[i] = args[i];
  Py_ssize_t nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t i = 0; i < nkw; i++) {
    PyObject *key = PyTuple_GET_ITEM(kwnames, i);
    int a = 0;
    while (a < A_COUNT && key != arg_strs[a]) a++;
    for (int b = 0; a == A_COUNT && b < A_COUNT; b++) /* not interned: compare the text */
      if (PyUnicode_Compare(key, arg_strs[b]) == 0) a = b;
    if (a == A_COUNT || !(takes & BIT(a))) {
      PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", fn, key);
      return -1;
    }
    if (values[a] != NULL) {
      PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", fn, arg_names[a]);
      return -1;
    }
    values[a] = args[nargs + i];
  }
  for (int a = A_Q; a <= A_V; a++)
    if (values[a] == NULL) {
      PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s'", fn, arg_names[a]);
      return -1;
    }
  return 0;
}

static int given(PyObject *x) {
  return x != NULL && x != Py_None;
}

static int truthy(PyObject *x) {
  return x != NULL && PyObject_IsTrue(x);
}

/* A window side: None (unbounded) or an int >= 0 */
static int window_side(PyObject *x, const char *what, int64_t *out) {
  if (x == Py_None) {
    *out = TXATTN_UNBOUNDED;
    return 0;
  }
  PyObject *index = PyBool_Check(x) ? NULL : PyNumber_Index(x);
  if (index == NULL) {
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "window %s must be an int >= 0 or None; got %R", what, x);
    return -1;
  }
  long long n = PyLong_AsLongLong(index);
  Py_DECREF(index);
  if (n == -1 && PyErr_Occurred()) return -1;
  if (n < 0) {
    txpy_value_error("window %s = %lld: give a count of keys >= 0, or None for unbounded", what, n);
    return -1;
  }
  *out = n;
  return 0;
}

/* causal and window as the C API's mask: causal with a window keeps the window's left side and
   ends it at the diagonal, as FlashAttention's window_size does with causal. */
static int parse_mask(PyObject *causal, PyObject *window, txpy_opts *o) {
  int is_causal = causal != NULL ? PyObject_IsTrue(causal) : 0;
  if (is_causal < 0) return -1;
  if (!given(window)) {
    o->mask = is_causal ? TXATTN_MASK_CAUSAL : TXATTN_MASK_NONE;
    return 0;
  }
  PyObject *pair = PySequence_Check(window) ? PySequence_Tuple(window) : NULL;
  if (pair == NULL || PyTuple_GET_SIZE(pair) != 2) {
    Py_XDECREF(pair);
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "window must be a pair (left, right); got %R", window);
    return -1;
  }
  int rc = window_side(PyTuple_GET_ITEM(pair, 0), "left", &o->window_left) ||
           window_side(PyTuple_GET_ITEM(pair, 1), "right", &o->window_right);
  Py_DECREF(pair);
  if (is_causal) o->window_right = 0;
  o->mask = TXATTN_MASK_WINDOW;
  return rc ? -1 : 0;
}

/* None: 0, which the library reads as 1/sqrt(d_qk); else a finite non-zero float32. */
static int parse_scale(PyObject *scale, float *out) {
  *out = 0.0f;
  if (!given(scale)) return 0;
  double s = PyFloat_AsDouble(scale);
  if (s == -1.0 && PyErr_Occurred()) return -1;
  if (!isfinite(s) || s == 0.0 || fabs(s) > 2.3e38) {
    txpy_value_error("scale = %R: it must be finite, non-zero and at most 2.3e38 in magnitude "
                     "(None takes 1/sqrt(d_qk))",
                     scale);
    return -1;
  }
  *out = (float)s;
  if (*out == 0.0f) {
    txpy_value_error("scale = %g rounds to 0 in float32, which the library reads as its "
                     "default: pass None for 1/sqrt(d_qk), or a larger scale",
                     s);
    return -1;
  }
  return 0;
}

/* The score modifiers' arguments, shared by every call that takes them: softcap None or a positive
   finite float32, sink_keys None or an int >= 0; alibi_slopes and sinks are kept as given (None
   for none) and read once the call knows heads_q (txpy_head_floats). */
static int parse_modifiers(PyObject *softcap, PyObject *alibi_slopes, PyObject *sinks,
                           PyObject *sink_keys, txpy_opts *o) {
  o->softcap = 0.0f;
  o->sink_keys = 0;
  o->alibi_slopes = given(alibi_slopes) ? alibi_slopes : NULL;
  o->sinks = given(sinks) ? sinks : NULL;
  if (given(softcap)) {
    double c = PyBool_Check(softcap) ? NAN : PyFloat_AsDouble(softcap);
    if (c == -1.0 && PyErr_Occurred()) return -1;
    o->softcap = (float)c;
    if (!(isfinite(o->softcap) && o->softcap > 0.0f)) {
      txpy_value_error("softcap = %R: it caps each score at c tanh(s / c), c a positive finite "
                       "float32 (Gemma 2: 50.0); None for no softcap",
                       softcap);
      return -1;
    }
  }
  if (given(sink_keys)) {
    PyObject *index = PyBool_Check(sink_keys) ? NULL : PyNumber_Index(sink_keys);
    if (index == NULL) {
      PyErr_Clear();
      PyErr_Format(PyExc_TypeError, "sink_keys must be an int >= 0; got %R", sink_keys);
      return -1;
    }
    long long n = PyLong_AsLongLong(index);
    Py_DECREF(index);
    if (n == -1 && PyErr_Occurred()) return -1;
    if (n < 0) {
      txpy_value_error("sink_keys = %lld: the number of first keys every row sees, >= 0", n);
      return -1;
    }
    o->sink_keys = n;
  }
  return 0;
}

static int parse_kernel(PyObject *kernel, const char **out) {
  *out = NULL;
  if (!given(kernel)) return 0;
  if (!PyUnicode_Check(kernel)) {
    PyErr_Format(PyExc_TypeError, "kernel must be a kernel's name (str); got %.100s",
                 Py_TYPE(kernel)->tp_name);
    return -1;
  }
  return (*out = PyUnicode_AsUTF8(kernel)) != NULL ? 0 : -1;
}

/* An element type by name ("f32", "float16", "bf16"), NumPy dtype or torch dtype: -1 for None */
static int parse_dtype(PyObject *d, const char *what, int *out) {
  *out = -1;
  if (!given(d)) return 0;
  PyObject *s = PyUnicode_Check(d) ? Py_NewRef(d) : PyObject_Str(d);
  const char *t = s ? PyUnicode_AsUTF8(s) : NULL;
  if (t != NULL) {
    if (strncmp(t, "torch.", 6) == 0) t += 6;
    static const struct {
      const char *name;
      txattn_dtype dtype;
    } names[] = {{"f32", TXATTN_DTYPE_F32},     {"float32", TXATTN_DTYPE_F32},
                 {"float", TXATTN_DTYPE_F32},   {"f16", TXATTN_DTYPE_F16},
                 {"float16", TXATTN_DTYPE_F16}, {"half", TXATTN_DTYPE_F16},
                 {"bf16", TXATTN_DTYPE_BF16},   {"bfloat16", TXATTN_DTYPE_BF16}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
      if (strcmp(t, names[i].name) == 0) *out = (int)names[i].dtype;
  }
  Py_XDECREF(s);
  if (t == NULL) return -1;
  if (*out < 0) {
    PyErr_Format(PyExc_ValueError, "%s = %R: txattn takes float32, float16 or bfloat16", what, d);
    return -1;
  }
  return 0;
}

/* ---- the default context --------------------------------------------------------------------- */

static PyObject *defaults;      /* {threads: Context} */
static PyObject *user_default;  /* set_default_context's, or NULL */
static PyObject *context_class; /* what default contexts are made of: txattn.Context */

PyObject *txpy_register(PyObject *self, PyObject *cls) {
  (void)self;
  if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &txpy_context_type)) {
    PyErr_SetString(PyExc_TypeError, "_register takes a subclass of _txattn.Context");
    return NULL;
  }
  Py_XSETREF(context_class, Py_NewRef(cls));
  Py_RETURN_NONE;
}

PyObject *txpy_default_context(PyObject *self, PyObject *unused) {
  (void)self, (void)unused;
  if (user_default != NULL) return Py_NewRef(user_default);
  int threads = txpy_torch_threads();
  if (threads < 0) {
    if (PyErr_Occurred()) return NULL;
    threads = 0; /* no torch: every CPU this process may run on */
  }
  PyObject *key = PyLong_FromLong(threads);
  if (key == NULL) return NULL;
  PyObject *ctx = PyDict_GetItemWithError(defaults, key);
  if (ctx != NULL || PyErr_Occurred()) {
    Py_DECREF(key);
    return ctx != NULL ? Py_NewRef(ctx) : NULL;
  }
  PyObject *cls = context_class, *kw = Py_BuildValue("{s:i}", "threads", threads),
           *empty = PyTuple_New(0);
  ctx = kw && empty ? PyObject_Call(cls ? cls : (PyObject *)&txpy_context_type, empty, kw) : NULL;
  Py_XDECREF(kw);
  Py_XDECREF(empty);
  PyObject *kept = ctx ? PyDict_SetDefault(defaults, key, ctx) : NULL; /* another thread's wins */
  Py_XINCREF(kept);
  Py_XDECREF(ctx);
  Py_DECREF(key);
  return kept;
}

PyObject *txpy_set_default_context(PyObject *self, PyObject *context) {
  (void)self;
  if (context != Py_None && !PyObject_TypeCheck(context, &txpy_context_type)) {
    PyErr_Format(PyExc_TypeError, "context must be a txattn.Context or None; got %.100s",
                 Py_TYPE(context)->tp_name);
    return NULL;
  }
  Py_XSETREF(user_default, context == Py_None ? NULL : Py_NewRef(context));
  Py_RETURN_NONE;
}

/* kv_dtype: None, or "q8_0", "e4m3", "e5m2" or "q4_0" (the 8-bit and 4-bit caches k and v hold as
   uint8) */
static int parse_kv_dtype(PyObject *x, int *out) {
  if (!given(x)) return 0;
  const char *s = PyUnicode_Check(x) ? PyUnicode_AsUTF8(x) : NULL;
  for (int t = TXATTN_DTYPE_Q8_0; s != NULL && t <= TXATTN_DTYPE_Q4_0; t++)
    if (strcmp(s, txattn_dtype_name((txattn_dtype)t)) == 0) {
      *out = t;
      return 0;
    }
  PyErr_Format(PyExc_ValueError, "kv_dtype must be None, 'q8_0', 'e4m3', 'e5m2' or 'q4_0'; got %R",
               x);
  return -1;
}

/* The context a call runs in: the one given, else the default */
static PyObject *context_of(PyObject *given_context) {
  if (!given(given_context)) return txpy_default_context(NULL, NULL);
  if (!PyObject_TypeCheck(given_context, &txpy_context_type)) {
    PyErr_Format(PyExc_TypeError, "context must be a txattn.Context; got %.100s",
                 Py_TYPE(given_context)->tp_name);
    return NULL;
  }
  return Py_NewRef(given_context);
}

/* ---- the calls ------------------------------------------------------------------------------- */

static PyObject *call(int op, const char *fn, unsigned takes, PyObject *const *args,
                      Py_ssize_t nargs, PyObject *kwnames) {
  PyObject *a[A_COUNT];
  txpy_opts o = {0};
  int o_dtype = -1;
  if (parse(fn, takes, args, nargs, kwnames, a) || parse_mask(a[A_CAUSAL], a[A_WINDOW], &o) ||
      parse_scale(a[A_SCALE], &o.scale) || parse_kernel(a[A_KERNEL], &o.kernel) ||
      parse_dtype(a[A_OUT_DTYPE], "out_dtype", &o_dtype) ||
      parse_modifiers(a[A_SOFTCAP], a[A_ALIBI_SLOPES], a[A_SINKS], a[A_SINK_KEYS], &o))
    return NULL;
  int want_lse = truthy(a[A_RETURN_LSE]);
  if (want_lse < 0) return NULL;
  o.q_lens = a[A_Q_LENS];
  o.kv_lens = a[A_KV_LENS];
  o.block_table = given(a[A_BLOCK_TABLE]) ? a[A_BLOCK_TABLE] : NULL;
  o.q_offsets = given(a[A_Q_OFFSETS]) ? a[A_Q_OFFSETS] : NULL;
  o.lse = want_lse;
  o.attn_mask = a[A_ATTN_MASK];
  o.k_scale = a[A_K_SCALE];
  o.v_scale = a[A_V_SCALE];
  int kv_dtype = -1;
  if (parse_kv_dtype(a[A_KV_DTYPE], &kv_dtype)) return NULL;
  PyObject *target = NULL;
  if (op == TXPY_OP_ATTENTION && (target = context_of(a[A_CONTEXT])) == NULL) return NULL;
  txpy_call c;
  txpy_call_init(&c, op);
  c.kv_dtype = kv_dtype;
  PyObject *result = NULL;
  if (txpy_call_inputs(&c, a[A_Q], a[A_K], a[A_V])) goto done;
  c.packed = o.q_offsets != NULL;
  if (op == TXPY_OP_BOUND) { /* o gives the type; lse is not needed */
    PyObject *out = a[A_OUT];
    if (given(out) && (PyTuple_Check(out) || PyList_Check(out)) && PySequence_Size(out) == 2) {
      out = PySequence_GetItem(out, 0);
      Py_XDECREF(out); /* the pair holds it */
    }
    if (txpy_call_outputs(&c, out, 0, o_dtype, 0)) goto done;
  } else if (txpy_call_outputs(&c, a[A_OUT], want_lse, -1, given(o.q_lens) || given(o.kv_lens))) {
    goto done;
  }
  result = txpy_call_run(&c, target, &o);
  if (result != NULL && op != TXPY_OP_BOUND) {
    Py_DECREF(result);
    result = txpy_call_result(&c, want_lse);
  }
done:
  txpy_call_release(&c);
  Py_XDECREF(target);
  return result;
}

PyObject *txpy_attention(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
  (void)self;
  return call(TXPY_OP_ATTENTION, "attention", takes_attention, args, nargs, kw);
}

PyObject *txpy_reference(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
  (void)self;
  return call(TXPY_OP_REFERENCE, "reference", takes_reference, args, nargs, kw);
}

PyObject *txpy_error_bound(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) {
  (void)self;
  return call(TXPY_OP_BOUND, "error_bound", takes_bound, args, nargs, kw);
}

PyObject *txpy_plan_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                               PyObject *kwnames) {
  txpy_plan *plan = (txpy_plan *)self;
  PyObject *a[A_COUNT];
  if (parse("Plan", takes_plan_call, args, PyVectorcall_NARGS(nargsf), kwnames, a)) return NULL;
  txpy_opts o = {0};
  o.alibi_slopes = a[A_ALIBI_SLOPES];
  o.sinks = a[A_SINKS];
  o.attn_mask = given(a[A_ATTN_MASK]) ? a[A_ATTN_MASK] : plan->attn_mask;
  o.q_lens = given(a[A_Q_LENS]) ? a[A_Q_LENS] : plan->q_lens;
  o.kv_lens = given(a[A_KV_LENS]) ? a[A_KV_LENS] : plan->kv_lens;
  o.block_table = given(a[A_BLOCK_TABLE]) ? a[A_BLOCK_TABLE] : plan->block_table;
  o.q_offsets = given(a[A_Q_OFFSETS]) ? a[A_Q_OFFSETS] : plan->q_offsets;
  o.k_scale = given(a[A_K_SCALE]) ? a[A_K_SCALE] : plan->k_scale;
  o.v_scale = given(a[A_V_SCALE]) ? a[A_V_SCALE] : plan->v_scale;
  const txattn_problem *pp = &plan->problem;
  if ((pp->page_size > 0) != (o.block_table != NULL))
    return txpy_value_error(
        pp->page_size > 0
            ? "the plan was made for paged K/V from a table's shape: pass block_table= to each call"
            : "block_table given, but the plan was made for contiguous K/V: make it with "
              "block_table= (a table, or its shape (batch, max_pages))");
  if (pp->packed != (o.q_offsets != NULL))
    return txpy_value_error(pp->packed
                                ? "the plan was made with q_offsets=True: pass q_offsets= to "
                                  "each call"
                                : "q_offsets given, but the plan was made for q [batch, heads, "
                                  "rows, dim]: make it with q_offsets= (the offsets, or True to "
                                  "give them with each call)");
  txpy_call c;
  txpy_call_init(&c, TXPY_OP_EXECUTE);
  c.packed = pp->packed;
  if (TXATTN_DTYPE_BIT(pp->k_type) & (TXATTN_DTYPES_KV8 | TXATTN_DTYPES_KV4))
    c.kv_dtype = (int)pp->k_type; /* k and v are the uint8 caches the plan was made for */
  PyObject *result = NULL;
  if (txpy_call_inputs(&c, a[A_Q], a[A_K], a[A_V]) ||
      txpy_call_outputs(&c, a[A_OUT], plan->problem.lse, (int)plan->problem.o_type,
                        given(o.q_lens) || given(o.kv_lens)))
    goto done;
  result = txpy_call_run(&c, self, &o);
  if (result != NULL) {
    Py_DECREF(result);
    result = txpy_call_result(&c, plan->problem.lse);
  }
done:
  txpy_call_release(&c);
  return result;
}

/* _run(op, target, q, k, v, out, lse, mask, window_left, window_right, scale, q_lens, kv_lens,
        kernel, names, attn_mask, modifiers, caches): the calls of the package's Python half, with every
        argument spelt out.
   op TXPY_OP_ATTENTION (target a Context or None; out an array) for scaled_dot_product_attention,
   with names the three names of q, k, v for messages; TXPY_OP_PLAN (target a Context; q, k, v
   tensors or (shape, dtype name) specs; out None or a spec, whose type the plan's results take;
   lse a bool; a length True for ragged; attn_mask a tensor, the calls' default, or the name of
   its type, "bool", "f32", "f16" or "bf16", for a mask given with each call) returns a Plan.
   modifiers: None, or (softcap,
   alibi_slopes, sinks, sink_keys) as attention() takes them (for a plan, alibi_slopes or sinks
   True: given with each call). caches: None, or (block_table, q_offsets, kv_dtype, k_scale,
   v_scale) as attention() takes them (for a plan, block_table may be its shape (batch,
   max_pages), q_offsets and the scales True: given with each call; k and v uint8 specs "u8"). */
PyObject *txpy_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (nargs != 18) {
    PyErr_SetString(PyExc_TypeError, "_run takes 18 arguments");
    return NULL;
  }
  long op = PyLong_AsLong(args[0]);
  if (op != TXPY_OP_ATTENTION && op != TXPY_OP_PLAN) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "_run: op is attention or plan");
    return NULL;
  }
  txpy_opts o = {0};
  long long mask = PyLong_AsLongLong(args[7]);
  o.window_left = PyLong_AsLongLong(args[8]);
  o.window_right = PyLong_AsLongLong(args[9]);
  if (PyErr_Occurred() || parse_scale(args[10], &o.scale) || parse_kernel(args[13], &o.kernel))
    return NULL;
  PyObject *mods = args[16];
  if (mods != Py_None && (!PyTuple_Check(mods) || PyTuple_GET_SIZE(mods) != 4)) {
    PyErr_SetString(PyExc_TypeError, "_run: modifiers must be None or a tuple of 4");
    return NULL;
  }
  if (mods != Py_None && parse_modifiers(PyTuple_GET_ITEM(mods, 0), PyTuple_GET_ITEM(mods, 1),
                                         PyTuple_GET_ITEM(mods, 2), PyTuple_GET_ITEM(mods, 3), &o))
    return NULL;
  if (mask < TXATTN_MASK_NONE || mask > TXATTN_MASK_WINDOW || o.window_left < -1 ||
      o.window_right < -1)
    return txpy_value_error("_run: mask %lld, window (%lld, %lld) out of range", mask,
                            (long long)o.window_left, (long long)o.window_right);
  o.mask = (int)mask;
  o.q_lens = args[11];
  o.kv_lens = args[12];
  o.attn_mask = args[15];
  PyObject *caches = args[17];
  int kv_dtype = -1;
  if (caches != Py_None) {
    if (!PyTuple_Check(caches) || PyTuple_GET_SIZE(caches) != 5) {
      PyErr_SetString(PyExc_TypeError, "_run: caches must be None or a tuple of 5");
      return NULL;
    }
    PyObject *x[5];
    for (int i = 0; i < 5; i++) x[i] = PyTuple_GET_ITEM(caches, i);
    if (parse_kv_dtype(x[2], &kv_dtype)) return NULL;
    o.block_table = given(x[0]) ? x[0] : NULL;
    o.q_offsets = given(x[1]) ? x[1] : NULL;
    o.k_scale = x[3];
    o.v_scale = x[4];
  }
  PyObject *target = op == TXPY_OP_PLAN ? Py_NewRef(args[1]) : context_of(args[1]);
  if (target == NULL) return NULL;
  if (!PyObject_TypeCheck(target, &txpy_context_type)) {
    Py_DECREF(target);
    PyErr_SetString(PyExc_TypeError, "_run: the target must be a txattn.Context");
    return NULL;
  }
  txpy_call c;
  txpy_call_init(&c, (int)op);
  c.kv_dtype = kv_dtype;
  c.packed = o.q_offsets != NULL;
  PyObject *result = NULL, *names = args[14];
  if (names != Py_None) {
    if (!PyTuple_Check(names) || PyTuple_GET_SIZE(names) != 3) {
      PyErr_SetString(PyExc_TypeError, "_run: names must be a tuple of 3 str");
      goto done;
    }
    for (int i = 0; i < 3; i++)
      if ((c.names[i] = PyUnicode_AsUTF8(PyTuple_GET_ITEM(names, i))) == NULL) goto done;
  }
  if (txpy_call_inputs(&c, args[2], args[3], args[4])) goto done;
  if (op == TXPY_OP_PLAN) {
    if ((o.lse = PyObject_IsTrue(args[6])) < 0) goto done;
    if (args[5] != Py_None) {
      if (txpy_view_import(args[5], "out", TXPY_SPEC_OK, &c.o)) goto done;
      c.have_o = 1;
    }
  } else if (txpy_call_outputs(&c, args[5], 0, -1, 0)) {
    goto done;
  }
  result = txpy_call_run(&c, target, &o);
done:
  txpy_call_release(&c);
  Py_DECREF(target);
  return result;
}

/* _spec(x, name): (shape, dtype name) of any tensor the extension reads (the buffer protocol,
   DLPack: bfloat16 included), for plans made from tensors NumPy cannot hold */
PyObject *txpy_spec(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  const char *name = nargs == 2 ? PyUnicode_AsUTF8(args[1]) : NULL;
  if (name == NULL) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "_spec takes 2 arguments");
    return NULL;
  }
  txpy_view v;
  if (txpy_import(args[0], name, TXPY_READ, &v, NULL)) return NULL;
  PyObject *shape = PyTuple_New(v.ndim);
  for (int i = 0; shape != NULL && i < v.ndim; i++) {
    PyObject *n = PyLong_FromLongLong(v.shape[i]);
    if (n == NULL)
      Py_CLEAR(shape);
    else
      PyTuple_SET_ITEM(shape, i, n);
  }
  txpy_view_release(&v);
  return shape != NULL ? Py_BuildValue("(Ns)", shape, txattn_dtype_name(v.dtype)) : NULL;
}

/* _alibi_slopes(heads, max_bias): txattn_alibi_slopes as a list of floats (float32 values) */
PyObject *txpy_alibi_slopes(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "_alibi_slopes takes 2 arguments");
    return NULL;
  }
  PyObject *index = PyBool_Check(args[0]) ? NULL : PyNumber_Index(args[0]);
  if (index == NULL) {
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "heads must be an int; got %R", args[0]);
    return NULL;
  }
  long long heads = PyLong_AsLongLong(index);
  Py_DECREF(index);
  double max_bias = PyErr_Occurred() ? -1.0 : PyFloat_AsDouble(args[1]);
  if (PyErr_Occurred()) return NULL;
  /* the buffer is sized before the library checks heads: more than it takes is refused here */
  if (heads < 1 || heads > 65536)
    return txpy_value_error("heads = %lld: give the number of query heads, 1..65536", heads);
  float *slopes = malloc((size_t)heads * sizeof *slopes);
  if (slopes == NULL) return PyErr_NoMemory();
  txattn_status s = txattn_alibi_slopes(heads, (float)max_bias, slopes);
  PyObject *list = s == TXATTN_OK ? PyList_New((Py_ssize_t)heads) : NULL;
  for (long long h = 0; list != NULL && h < heads; h++) {
    PyObject *f = PyFloat_FromDouble(slopes[h]);
    if (f == NULL)
      Py_CLEAR(list);
    else
      PyList_SET_ITEM(list, (Py_ssize_t)h, f);
  }
  free(slopes);
  return s == TXATTN_OK ? list : txpy_raise_status(s, txattn_last_error());
}

int txpy_api_init(void) {
  for (int a = 0; a < A_COUNT; a++)
    if ((arg_strs[a] = PyUnicode_InternFromString(arg_names[a])) == NULL) return -1;
  defaults = PyDict_New();
  return defaults != NULL ? 0 : -1;
}

/* ---- docstrings (the text signature first, as inspect.signature reads it) ------------------- */

const char txpy_attention_doc[] =
    "attention($module, /, q, k, v, *, causal=False, window=None, scale=None, kv_lens=None, "
    "q_lens=None, attn_mask=None, return_lse=False, out=None, kernel=None, context=None, "
    "softcap=None, alibi_slopes=None, sinks=None, sink_keys=0, block_table=None, "
    "q_offsets=None, kv_dtype=None, k_scale=None, v_scale=None)\n--\n\n"
    "O = softmax(scale * Q K^T + mask) V, exact (within txattn's error bound of the fp64\n"
    "reference), on the fastest kernel the dispatcher knows for the shape.\n\n"
    "q [batch, heads_q, n_q, d_qk], k [batch, heads_kv, n_kv, d_qk], v [batch, heads_kv, n_kv, "
    "d_v]:\n"
    "    NumPy arrays or torch CPU tensors (float32, float16, bfloat16), any strides whose last\n"
    "    dimension is contiguous (a [B, N, H, D] tensor passes as x.transpose(1, 2), uncopied).\n"
    "    heads_q a multiple of heads_kv: query head h reads key/value head h // (heads_q // "
    "heads_kv).\n"
    "causal: key j visible to row i when j <= i + n_kv - n_q (bottom-right aligned, as decoding\n"
    "    against a KV cache; torch's is_causal aligns top-left: see "
    "scaled_dot_product_attention).\n"
    "window: (left, right): keys from pos(i) - left to pos(i) + right, pos(i) = i + n_kv - n_q;\n"
    "    None on a side for unbounded. With causal=True the right side is 0.\n"
    "scale: None for 1/sqrt(d_qk) (held in float32, as the library holds it).\n"
    "kv_lens, q_lens: a ragged batch: sequence b has kv_lens[b] <= n_kv keys and q_lens[b] <= "
    "n_q\n"
    "    queries (positions align bottom-right within it); rows past q_len are not written (0 in "
    "a\n"
    "    new o, -inf in a new lse).\n"
    "attn_mask: boolean (True: the key is visible) or floating (float32, float16, bfloat16: added\n"
    "    to the score, -inf hides the key), broadcastable to [batch, heads_q, n_q, n_kv] (sizes "
    "of\n"
    "    1 or missing leading dimensions broadcast as stride 0; read in place, any strides); it\n"
    "    combines with causal and window. A row that sees no key gets 0 (lse -inf).\n"
    "block_table: paged K/V: k and v are page pools [n_pages, heads_kv, P, dim] (vLLM's\n"
    "    [n_pages, P, heads_kv, dim] passes as k_cache.transpose(1, 2), uncopied) and block_table\n"
    "    [batch, max_pages] int page indices: key j of sequence b is row j % P of page\n"
    "    block_table[b][j // P]; n_kv is max_pages * P, kv_lens each sequence's keys. Pages may "
    "be\n"
    "    shared; entries past what kv_len needs are not read.\n"
    "q_offsets: packed queries (cu_seqlens, as flash_attn_varlen_func's cu_seqlens_q): batch + 1\n"
    "    non-decreasing ints from 0 to q's rows; q is [total_rows, heads_q, d_qk] and o (and\n"
    "    lse) [total_rows, heads_q, d_v] ([total_rows, heads_q]), sequence b's rows q_offsets[b]\n"
    "    .. q_offsets[b + 1] - 1; the batch is k's (or block_table's), kv_lens each sequence's\n"
    "    keys; q_lens must be None.\n"
    "return_lse: also return lse [batch, heads_q, n_q] float32, log(sum over visible keys of\n"
    "    exp(scale q.k)) (-inf for a row with no key), for merge().\n"
    "out: o to write into (any strides, any of the three types), or (o, lse) with return_lse.\n"
    "kernel: a kernel's name (\"tiled.avx512\") instead of the dispatcher's choice: a plan is "
    "made\n"
    "    for each call (Context.plan keeps one).\n"
    "context: a Context; None for default_context().\n"
    "Score modifiers (each combines with every other argument), in the order applied to s =\n"
    "scale q.k:\n"
    "softcap: c > 0 makes each score c * tanh(s / c) (Gemma 2: 50.0); None: none.\n"
    "alibi_slopes: heads_q numbers m_h (a 1-D NumPy array, torch tensor or sequence of any real\n"
    "    type, read as float32, finite): adds m_h * (j - pos(i)) to each score (BLOOM, MPT;\n"
    "    alibi_slopes(heads_q) gives the standard ones).\n"
    "sinks: heads_q sink logits t_h (finite, or -inf for none): the softmax denominator of\n"
    "    every row of head h gains exp(t_h) with no value (gpt-oss); lse stays over the keys "
    "alone\n"
    "    (merge(..., sinks=) applies sinks to parts computed without them).\n"
    "sink_keys: K >= 0: the first K keys of each sequence are visible to every row beside what\n"
    "    causal or window shows (StreamingLLM's sink tokens; without a mask every key is).\n"
    "kv_dtype: 'q8_0', 'e4m3', 'e5m2' or 'q4_0': k and v are 8-bit (4-bit) caches held as uint8\n"
    "    arrays (quantize() makes them): e4m3/e5m2 one byte a value, q8_0 ggml's 34-byte blocks\n"
    "    of 32 values (last dimension d / 32 * 34 bytes), q4_0 its 18-byte ones (d / 32 * 18).\n"
    "    Exact on the values the cache holds.\n"
    "k_scale, v_scale: for fp8, the fp32 scale of each KV head (heads_kv numbers, or one float\n"
    "    for every head): a value is its fp8 value times its head's scale.\n\n"
    "Returns o (same kind as q: NumPy array or torch tensor, q's dtype), or (o, lse). Raises\n"
    "ValueError (naming the argument and the shapes) for malformed arguments, TypeError for "
    "objects\n"
    "that are not tensors, and txattn.Error subclasses for the library's statuses.";

const char txpy_reference_doc[] =
    "reference($module, /, q, k, v, *, causal=False, window=None, scale=None, kv_lens=None, "
    "q_lens=None, attn_mask=None, return_lse=False, out=None, softcap=None, alibi_slopes=None, "
    "sinks=None, sink_keys=0, block_table=None, q_offsets=None, kv_dtype=None, k_scale=None, "
    "v_scale=None)\n--\n\n"
    "The fp64 oracle (txattn_reference): attention() computed in double precision on one thread,\n"
    "rounded once to the output's type. The arguments and results of attention(), without kernel\n"
    "and context.";

const char txpy_error_bound_doc[] =
    "error_bound($module, /, q, k, v, *, causal=False, window=None, scale=None, kv_lens=None, "
    "q_lens=None, attn_mask=None, return_lse=False, out=None, out_dtype=None, softcap=None, "
    "alibi_slopes=None, sinks=None, sink_keys=0, block_table=None, q_offsets=None, "
    "kv_dtype=None, k_scale=None, v_scale=None)\n--\n\n"
    "The largest max|O - O_ref| a kernel may have on these inputs (txattn_error_bound): what\n"
    "\"exact\" promises. The arguments of attention(); out (or out_dtype, default q's) gives the\n"
    "output's type, which the bound depends on (a 16-bit o adds its rounding); it is not read.\n\n"
    "Returns the bound, or with return_lse=True the triple (bound, lse_abs, lse_rel): every row's\n"
    "lse is within lse_abs + lse_rel * |lse_ref| of the reference's (txattn_lse_error_bound).";

const char txpy_plan_call_doc[] =
    "A plan: one problem, its kernel chosen once (Context.plan makes it). Calling it,\n"
    "plan(q, k, v, *, q_lens=None, kv_lens=None, out=None, alibi_slopes=None, sinks=None,\n"
    "attn_mask=None, block_table=None, q_offsets=None, k_scale=None, v_scale=None), runs\n"
    "that kernel on tensors of the shapes and types it was made for (strides may differ per\n"
    "call) and returns o, or (o, lse) for a plan made with return_lse=True. q_lens, kv_lens: a\n"
    "ragged plan's lengths (default: those given to Context.plan, else every row); out: o, or\n"
    "(o, lse), to write into; alibi_slopes, sinks, attn_mask: for a plan made with them, this\n"
    "call's values (default: those given to Context.plan; a mask of the plan's kind and type).\n"
    "block_table, q_offsets, k_scale, v_scale: for a plan made paged, packed or for fp8 caches,\n"
    "this call's (default: those given to Context.plan); k and v are of the plan's kv_dtype, a\n"
    "packed q may have any rows, at most the plan's n_q a sequence.\n"
    "Safe to call from many threads at once.";

/* _convert(src, dst, src_type, dst_type, scale): txattn_convert over two C-contiguous buffers
   (NumPy arrays), every value of src into dst, whose size must be what they make. _convert_scale(
   src, src_type, fp8_type): txattn_convert_scale. Types are txattn_dtype numbers. */
PyObject *txpy_convert(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (nargs != 5) {
    PyErr_SetString(PyExc_TypeError, "_convert takes 5 arguments");
    return NULL;
  }
  const long st = PyLong_AsLong(args[2]), dt = PyLong_AsLong(args[3]);
  const double scale = PyFloat_AsDouble(args[4]);
  if (PyErr_Occurred()) return NULL;
  if (txattn_dtype_size((txattn_dtype)st) == 0 || txattn_dtype_size((txattn_dtype)dt) == 0)
    return txpy_value_error("_convert: types %ld, %ld are not txattn_dtypes", st, dt);
  Py_buffer src, dst;
  if (PyObject_GetBuffer(args[0], &src, PyBUF_C_CONTIGUOUS) != 0) return NULL;
  if (PyObject_GetBuffer(args[1], &dst, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) != 0) {
    PyBuffer_Release(&src);
    return NULL;
  }
  const int64_t n = (int64_t)src.len / (int64_t)txattn_dtype_size((txattn_dtype)st) *
                    txattn_dtype_block((txattn_dtype)st);
  PyObject *result = NULL;
  if (txattn_dtype_bytes((txattn_dtype)dt, n) != (int64_t)dst.len) {
    txpy_value_error("_convert: %lld values make %lld bytes of %s, not %zd", (long long)n,
                     (long long)txattn_dtype_bytes((txattn_dtype)dt, n),
                     txattn_dtype_name((txattn_dtype)dt), dst.len);
  } else {
    PyThreadState *unlocked = PyEval_SaveThread();
    txattn_status s =
        txattn_convert(src.buf, (txattn_dtype)st, dst.buf, (txattn_dtype)dt, n, (float)scale);
    PyEval_RestoreThread(unlocked);
    result = s == TXATTN_OK ? Py_NewRef(Py_None) : txpy_raise_status(s, txattn_last_error());
  }
  PyBuffer_Release(&src);
  PyBuffer_Release(&dst);
  return result;
}

PyObject *txpy_convert_scale(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (nargs != 3) {
    PyErr_SetString(PyExc_TypeError, "_convert_scale takes 3 arguments");
    return NULL;
  }
  const long st = PyLong_AsLong(args[1]), ft = PyLong_AsLong(args[2]);
  if (PyErr_Occurred()) return NULL;
  if (txattn_dtype_size((txattn_dtype)st) == 0)
    return txpy_value_error("_convert_scale: type %ld is not a txattn_dtype", st);
  Py_buffer src;
  if (PyObject_GetBuffer(args[0], &src, PyBUF_C_CONTIGUOUS) != 0) return NULL;
  float scale = 0.0f;
  txattn_status s = txattn_convert_scale(
      src.buf, (txattn_dtype)st, (int64_t)src.len / (int64_t)txattn_dtype_size((txattn_dtype)st),
      (txattn_dtype)ft, &scale);
  PyBuffer_Release(&src);
  return s == TXATTN_OK ? PyFloat_FromDouble(scale) : txpy_raise_status(s, txattn_last_error());
}
