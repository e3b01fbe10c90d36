/* SPDX-License-Identifier: MIT */
/* The mechanics of a call: its tensors imported (kinds.c), its results allocated where the caller
 * gave none, every shape, type and length checked against the others, the txattn_problem and
 * txattn_tensors built from them, and only then the library called, with the GIL released.
 * Shapes the library would read as defaults (a zero batch, heads or rows) never reach it: they
 * are answered here. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "txpy.h"
#include "views.h"

void txpy_call_init(txpy_call *c, int op) {
  memset(c, 0, sizeof *c);
  c->op = op;
  c->p = (txattn_problem)TXATTN_PROBLEM_INIT;
  c->names[0] = "q", c->names[1] = "k", c->names[2] = "v";
  c->kv_dtype = -1;
}

void txpy_call_release(txpy_call *c) {
  txpy_view *views[6] = {&c->q, &c->k, &c->v, &c->o, &c->lse, &c->mask};
  for (int i = 0; i < 6; i++) txpy_view_release(views[i]);
  free(c->q_lens);
  free(c->kv_lens);
  free(c->alibi_slopes);
  free(c->sinks);
  free(c->k_scale);
  free(c->v_scale);
  c->k_scale = c->v_scale = NULL;
  free(c->table);
  free(c->q_offsets);
  c->q_offsets = NULL;
  c->q_lens = c->kv_lens = NULL;
  c->alibi_slopes = c->sinks = NULL;
  c->table = NULL;
  Py_CLEAR(c->o_obj);
  Py_CLEAR(c->lse_obj);
}

const char *txpy_dtype_str(txattn_dtype d) {
  return d == TXATTN_DTYPE_F32    ? "float32"
         : d == TXATTN_DTYPE_F16  ? "float16"
         : d == TXATTN_DTYPE_BF16 ? "bfloat16"
                                  : txattn_dtype_name(d); /* the narrow caches: "q8_0" ... */
}

PyObject *txpy_value_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  PyErr_FormatV(PyExc_ValueError, fmt, ap);
  va_end(ap);
  return NULL;
}
#define value_error txpy_value_error

int txpy_need_ndim(const txpy_view *v, int ndim, const char *layout) {
  if (v->ndim == ndim) return 0;
  char s[160];
  value_error("%s must be %d-D %s; got shape %s (%d-D)", v->name, ndim, layout,
              txpy_shape_str(v, s, sizeof s), v->ndim);
  return -1;
}

static const char bhnd[] = "[batch, heads, rows, dim]";
static const char rhd[] = "[total_rows, heads, dim] (packed by q_offsets)";

/* "k has batch 3 but q has 2 (k (3, 2, 16, 8), q (2, 8, 16, 8))" */
static int mismatch(const txpy_view *a, const char *what, int64_t av, const txpy_view *b,
                    int64_t bv, const char *why) {
  char sa[160], sb[160];
  value_error("%s has %s %lld but %s has %lld%s (%s %s, %s %s)", a->name, what, (long long)av,
              b->name, (long long)bv, why, a->name, txpy_shape_str(a, sa, sizeof sa), b->name,
              txpy_shape_str(b, sb, sizeof sb));
  return -1;
}

int txpy_call_inputs(txpy_call *c, PyObject *q, PyObject *k, PyObject *v) {
  c->q_obj = q;
  int flags = c->op == TXPY_OP_PLAN ? TXPY_SPEC_OK : TXPY_READ;
  const int kv8 = c->kv_dtype >= 0 ? TXPY_KV8 : 0;
  if (txpy_import(q, c->names[0], flags, &c->q, &c->torch) ||
      txpy_import(k, c->names[1], flags | kv8, &c->k, NULL) ||
      txpy_import(v, c->names[2], flags | kv8, &c->v, NULL))
    return -1;
  return kv8 && (txpy_view_kv8(&c->k, (txattn_dtype)c->kv_dtype) ||
                 txpy_view_kv8(&c->v, (txattn_dtype)c->kv_dtype))
             ? -1
             : 0;
}

/* Whether q is contiguous with this shape and type (its like is then a result's) */
static int q_is_like(const txpy_call *c, int ndim, const int64_t *shape, txattn_dtype dtype) {
  if (c->q.ndim != ndim || c->q.dtype != dtype || c->q.spec) return 0;
  int64_t compact = 1;
  for (int i = ndim - 1; i >= 0; i--) {
    if (c->q.shape[i] != shape[i] || (shape[i] > 1 && c->q.strides[i] != compact)) return 0;
    compact *= shape[i];
  }
  return 1;
}

/* A new result of q's kind, contiguous, imported as *view; fill: 0 none, 1 zeros, 2 -inf. */
static int allocate(txpy_call *c, int ndim, const int64_t *shape, txattn_dtype dtype,
                    const char *name, int fill, PyObject **obj, txpy_view *view) {
  int like = c->torch && q_is_like(c, ndim, shape, dtype);
  *obj = txpy_alloc(c->torch, c->q_obj, like, ndim, shape, dtype);
  if (*obj == NULL || txpy_import_new(*obj, c->torch, name, ndim, shape, dtype, view)) return -1;
  if (fill && txpy_view_count(view) > 0) txpy_fill(view, fill == 2);
  return 0;
}

int txpy_call_outputs(txpy_call *c, PyObject *out, int want_lse, int o_dtype, int ragged) {
  if (out == NULL || out == Py_None) {
    const int nd = c->packed ? 3 : 4; /* packed: [rows, heads, dim], lse [rows, heads] */
    if (txpy_need_ndim(&c->q, nd, c->packed ? rhd : bhnd) || txpy_need_ndim(&c->v, 4, bhnd))
      return -1;
    int64_t shape[4] = {c->q.shape[0], c->q.shape[1], c->q.shape[2], c->v.shape[3]};
    shape[nd - 1] = c->v.shape[3];
    txattn_dtype t = o_dtype >= 0 ? (txattn_dtype)o_dtype : c->q.dtype;
    if (allocate(c, nd, shape, t, "out", ragged ? 1 : 0, &c->o_obj, &c->o)) return -1;
    c->have_o = 1;
    if (want_lse) {
      if (allocate(c, nd - 1, shape, TXATTN_DTYPE_F32, "lse out", ragged ? 2 : 0, &c->lse_obj,
                   &c->lse))
        return -1;
      c->have_lse = 1;
    }
    return 0;
  }
  PyObject *o = out, *lse = NULL;
  int pair = PyTuple_Check(out) || PyList_Check(out);
  if (want_lse) {
    if (!pair || PySequence_Size(out) != 2) {
      PyErr_SetString(PyExc_TypeError, "with return_lse=True, out must be a pair (o, lse)");
      return -1;
    }
    o = PySequence_GetItem(out, 0);
    lse = PySequence_GetItem(out, 1);
    Py_XDECREF(o); /* a tuple or list holds them */
    Py_XDECREF(lse);
    if (o == NULL || lse == NULL) return -1;
  } else if (pair) {
    PyErr_SetString(PyExc_TypeError, "out=(o, lse) needs return_lse=True");
    return -1;
  }
  int flags = c->op == TXPY_OP_BOUND ? TXPY_READ : TXPY_WRITE;
  if (txpy_import(o, "out", flags, &c->o, NULL)) return -1;
  c->have_o = 1;
  c->o_obj = Py_NewRef(o);
  if (lse != NULL) {
    if (txpy_import(lse, "lse out", TXPY_WRITE | TXPY_ROWS, &c->lse, NULL)) return -1;
    c->have_lse = 1;
    c->lse_obj = Py_NewRef(lse);
  }
  return 0;
}

static int check_shapes(txpy_call *c);

/* A packed call's shapes: q [rows, heads_q, d_qk], o and lse of its rows and heads, as a 4-D
   call [batch, heads_q, n_q, d_qk] (n_q the most rows of a sequence) that check_shapes checks
   against k and v; q_offsets are parsed and checked by then. 0, or -1 with an exception. */
static int check_packed(txpy_call *c) {
  if (txpy_need_ndim(&c->q, 3, rhd)) return -1;
  char so[160], sq[160];
  const int64_t rows = c->q.shape[0], heads = c->q.shape[1];
  if (c->have_o && (c->o.ndim != 3 || c->o.shape[0] != rows || c->o.shape[1] != heads ||
                    c->o.shape[2] != c->v.shape[c->v.ndim - 1]))
    return value_error("%s has shape %s but the result has shape (%lld, %lld, %lld): [rows of %s, "
                       "heads of %s, dim of %s] (%s %s)",
                       c->o.name, txpy_shape_str(&c->o, so, sizeof so), (long long)rows,
                       (long long)heads, (long long)c->v.shape[c->v.ndim - 1], c->q.name, c->q.name,
                       c->v.name, c->q.name, txpy_shape_str(&c->q, sq, sizeof sq)),
           -1;
  if (c->have_lse && (c->lse.ndim != 2 || c->lse.shape[0] != rows || c->lse.shape[1] != heads))
    return value_error("%s has shape %s but the log-sum-exp has shape (%lld, %lld): [rows, heads] "
                       "of %s %s",
                       c->lse.name, txpy_shape_str(&c->lse, so, sizeof so), (long long)rows,
                       (long long)heads, c->q.name, txpy_shape_str(&c->q, sq, sizeof sq)),
           -1;
  if (!c->paged && c->k.ndim == 4 && c->k.shape[0] != c->p.batch)
    return value_error("%s has batch %lld but q_offsets give %lld sequences (batch + 1 offsets)",
                       c->k.name, (long long)c->k.shape[0], (long long)c->p.batch),
           -1;
  /* a plan whose calls give the offsets: any sequence may have every row */
  int64_t n_q = c->q_offsets == NULL ? rows : 0;
  for (int64_t b = 0; c->q_offsets != NULL && b < c->p.batch; b++)
    if (c->q_offsets[b + 1] - c->q_offsets[b] > n_q) n_q = c->q_offsets[b + 1] - c->q_offsets[b];
  /* check_shapes on q, o and lse seen as [batch, heads, n_q, dim] views of the packed rows */
  txpy_view q = c->q, o = c->o, lse = c->lse;
  const int64_t q4[4] = {c->p.batch, heads, n_q, c->q.shape[2]};
  const int64_t qs[4] = {0, c->q.strides[1], c->q.strides[0], c->q.strides[2]};
  c->q.ndim = 4;
  memcpy(c->q.shape, q4, sizeof q4);
  memcpy(c->q.strides, qs, sizeof qs);
  if (c->have_o) {
    const int64_t os[4] = {0, o.strides[1], o.strides[0], o.strides[2]};
    c->o.ndim = 4;
    memcpy(c->o.shape, q4, sizeof q4);
    c->o.shape[3] = o.shape[2];
    memcpy(c->o.strides, os, sizeof os);
  }
  if (c->have_lse) {
    const int64_t ls[3] = {0, lse.strides[1], lse.strides[0]};
    c->lse.ndim = 3;
    memcpy(c->lse.shape, q4, 3 * sizeof q4[0]);
    memcpy(c->lse.strides, ls, sizeof ls);
  }
  c->packed = 0;
  int rc = check_shapes(c);
  c->packed = 1;
  c->q = q, c->o = o, c->lse = lse; /* the views as given: make_tensors lays them out packed */
  c->p.n_q = n_q;
  c->p.packed = 1;
  return rc;
}

/* The problem's sizes from q, k, v (and o, lse if given), each checked against the others. */
static int check_shapes(txpy_call *c) {
  if (c->packed) return check_packed(c);
  if (txpy_need_ndim(&c->q, 4, bhnd) || txpy_need_ndim(&c->k, 4, bhnd) ||
      txpy_need_ndim(&c->v, 4, bhnd))
    return -1;
  const int64_t *q = c->q.shape, *k = c->k.shape, *v = c->v.shape;
  if (!c->paged && k[0] != q[0]) return mismatch(&c->k, "batch", k[0], &c->q, q[0], "");
  if (!c->paged && v[0] != q[0]) return mismatch(&c->v, "batch", v[0], &c->q, q[0], "");
  if (c->paged && v[0] != k[0])
    return mismatch(&c->v, "pages", v[0], &c->k, k[0], ": k and v share the block table");
  if (k[3] != q[3]) return mismatch(&c->k, "dim (d_qk)", k[3], &c->q, q[3], ": q . k needs both");
  if (v[1] != k[1]) return mismatch(&c->v, "heads", v[1], &c->k, k[1], "");
  if (v[2] != k[2]) return mismatch(&c->v, "rows", v[2], &c->k, k[2], ": one value per key");
  if (q[3] == 0) return value_error("%s has dim 0: d_qk must be at least 1", c->q.name), -1;
  if (v[3] == 0) return value_error("%s has dim 0: d_v must be at least 1", c->v.name), -1;
  if ((k[1] == 0 && q[1] != 0) || (k[1] != 0 && q[1] % k[1] != 0))
    return mismatch(&c->q, "heads", q[1], &c->k, k[1],
                    ": the query heads must be a multiple of the key/value heads (GQA)");
  c->p.batch = q[0];
  c->p.heads_q = q[1];
  c->p.heads_kv = k[1];
  c->p.n_q = q[2];
  c->p.n_kv = c->paged ? c->p.max_pages * k[2] : k[2];
  if (c->paged) { /* k[2] keys a page; every sequence up to max_pages of them */
    c->p.page_size = k[2];
    c->p.n_pages = k[0];
  }
  c->p.d_qk = q[3];
  c->p.d_v = v[3];
  c->p.q_type = c->q.dtype;
  c->p.k_type = c->k.dtype;
  c->p.v_type = c->v.dtype;
  c->p.o_type = c->have_o ? c->o.dtype : c->q.dtype;
  char so[160], sq[160], sv[160];
  if (c->have_o) {
    const int64_t want[4] = {q[0], q[1], q[2], v[3]};
    if (c->o.ndim != 4 || memcmp(c->o.shape, want, sizeof want) != 0)
      return value_error("%s has shape %s but the result has shape (%lld, %lld, %lld, %lld): "
                         "[batch, heads of %s, rows of %s, dim of %s] (%s %s, %s %s)",
                         c->o.name, txpy_shape_str(&c->o, so, sizeof so), (long long)q[0],
                         (long long)q[1], (long long)q[2], (long long)v[3], c->q.name, c->q.name,
                         c->v.name, c->q.name, txpy_shape_str(&c->q, sq, sizeof sq), c->v.name,
                         txpy_shape_str(&c->v, sv, sizeof sv)),
             -1;
  }
  if (c->have_lse) {
    const int64_t want[3] = {q[0], q[1], q[2]};
    if (c->lse.ndim != 3 || memcmp(c->lse.shape, want, sizeof want) != 0)
      return value_error("%s has shape %s but the log-sum-exp has shape (%lld, %lld, %lld): "
                         "[batch, heads, rows] of %s %s",
                         c->lse.name, txpy_shape_str(&c->lse, so, sizeof so), (long long)q[0],
                         (long long)q[1], (long long)q[2], c->q.name,
                         txpy_shape_str(&c->q, sq, sizeof sq)),
             -1;
    if (c->lse.dtype != TXATTN_DTYPE_F32)
      return value_error("%s has dtype %s; the log-sum-exp is float32", c->lse.name,
                         txpy_dtype_str(c->lse.dtype)),
             -1;
  }
  return 0;
}

/* obj.attr, or NULL with no exception where obj has none */
static PyObject *optional_attr(PyObject *obj, const char *attr) {
  PyObject *x = PyObject_GetAttrString(obj, attr);
  if (x == NULL && PyErr_ExceptionMatches(PyExc_AttributeError)) PyErr_Clear();
  return x;
}

int txpy_head_floats(PyObject *obj, const char *name, int64_t heads, const txpy_view *ref,
                     int minus_inf, float **out) {
  *out = NULL;
  char sr[160];
  PyObject *seq = NULL, *ndim = optional_attr(obj, "ndim");
  if (ndim == NULL && PyErr_Occurred()) return -1;
  if (ndim != NULL) { /* an array or tensor: 1-D, read through tolist() (any dtype, device) */
    long n = PyLong_AsLong(ndim);
    Py_DECREF(ndim);
    if (n == -1 && PyErr_Occurred()) return -1;
    if (n != 1) {
      PyObject *shape = optional_attr(obj, "shape");
      value_error("%s must be 1-D, one number per query head (%lld heads: %s %s); got shape %R",
                  name, (long long)heads, ref->name, txpy_shape_str(ref, sr, sizeof sr),
                  shape != NULL ? shape : Py_None);
      Py_XDECREF(shape);
      return -1;
    }
    PyObject *list = PyObject_CallMethod(obj, "tolist", NULL);
    if (list == NULL) return -1;
    seq = PySequence_Fast(list, "tolist() gave no sequence");
    Py_DECREF(list);
  } else if (PyUnicode_Check(obj) || PyBytes_Check(obj) || PyBool_Check(obj) ||
             !PySequence_Check(obj)) {
    PyErr_Format(PyExc_TypeError,
                 "%s must be a 1-D array, tensor or sequence of %lld numbers, one per query "
                 "head; got %.100s",
                 name, (long long)heads, Py_TYPE(obj)->tp_name);
    return -1;
  } else {
    seq = PySequence_Fast(obj, "not a sequence");
  }
  if (seq == NULL) return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  float *f = n == heads ? malloc(((size_t)heads + 1) * sizeof *f) : NULL;
  if (n != heads) {
    value_error("%s has %zd entries but %s has %lld heads: one per query head (%s (%zd,), %s %s)",
                name, n, ref->name, (long long)heads, name, n, ref->name,
                txpy_shape_str(ref, sr, sizeof sr));
  } else if (f == NULL) {
    PyErr_NoMemory();
  } else {
    for (Py_ssize_t h = 0; h < n; h++) {
      PyObject *x = PySequence_Fast_GET_ITEM(seq, h);
      double d = PyFloat_AsDouble(x);
      if (d == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s[%zd] = %R: %s holds one real number per query head", name,
                     h, x, name);
        break;
      }
      f[h] = (float)d; /* the library's type: what the kernels, reference and bound read */
      if (!(isfinite(f[h]) || (minus_inf && f[h] == -INFINITY))) {
        value_error(minus_inf ? "%s[%zd] = %R%s: a sink logit must be finite, or -inf for no sink"
                              : "%s[%zd] = %R%s: a slope must be finite",
                    name, h, x, isfinite(d) ? " (beyond float32)" : "");
        break;
      }
    }
    if (!PyErr_Occurred()) *out = f;
  }
  Py_DECREF(seq);
  if (*out == NULL) free(f);
  return *out != NULL ? 0 : -1;
}

/* (batch, max_pages) where obj is a tuple of two ints (a plan's table shape), else 0 */
static int table_shape(PyObject *obj, int64_t *rows, int64_t *width) {
  if (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) != 2 ||
      !PyLong_Check(PyTuple_GET_ITEM(obj, 0)) || !PyLong_Check(PyTuple_GET_ITEM(obj, 1)))
    return 0;
  *rows = PyLong_AsLongLong(PyTuple_GET_ITEM(obj, 0));
  *width = PyLong_AsLongLong(PyTuple_GET_ITEM(obj, 1));
  return 1;
}

/* block_table as batch rows of max_pages ints each (int32), copied: the pages of each sequence in
   the pools k and v. Which entries name pages of the pool is the library's check (it reads only
   those a sequence's kv_len needs). A plan takes the table's shape (batch, max_pages) too. The
   batch is q's, the offsets', or (c->p.batch -1: a packed plan without offsets) the table's.
   0, or -1 with an exception. */
static int parse_block_table(txpy_call *c, PyObject *obj) {
  c->paged = 1;
  int64_t batch = c->packed ? c->p.batch : c->q.ndim == 4 ? c->q.shape[0] : -1, rows, width;
  if (obj == Py_True)
    return value_error("block_table=True: a paged plan needs the table's width; give the table "
                       "(the calls' default) or its shape (batch, max_pages)"),
           -1;
  if (c->op == TXPY_OP_PLAN && table_shape(obj, &rows, &width)) {
    if (PyErr_Occurred()) return -1;
    if ((batch >= 0 && rows != batch) || rows < 0 || width < 1)
      return value_error("block_table shape (%lld, %lld): [batch, max_pages] with %s's batch "
                         "(%lld) and max_pages >= 1",
                         (long long)rows, (long long)width, c->q.name, (long long)batch),
             -1;
    c->p.batch = c->packed ? rows : c->p.batch;
    c->p.max_pages = width;
    return 0;
  }
  PyObject *list = NULL;
  if (txpy_is_torch(obj) > 0)
    obj = list = PyObject_CallMethod(obj, "tolist", NULL);
  else if (obj != NULL && PyObject_HasAttrString(obj, "tolist"))
    obj = list = PyObject_CallMethod(obj, "tolist", NULL);
  PyObject *seq = obj != NULL ? PySequence_Fast(obj, "") : NULL;
  Py_XDECREF(list);
  if (seq != NULL && batch < 0) batch = c->p.batch = PySequence_Fast_GET_SIZE(seq);
  int rc = -1;
  if (seq == NULL || PySequence_Fast_GET_SIZE(seq) != batch) {
    if (seq == NULL) PyErr_Clear();
    value_error("block_table must hold one row of page indices per sequence of %s (%lld "
                "rows), as vLLM's block_tables [batch, max_pages]",
                c->q.name, (long long)batch);
    goto done;
  }
  for (Py_ssize_t b = 0; b < batch; b++) {
    PyObject *row = PySequence_Fast(PySequence_Fast_GET_ITEM(seq, b), "");
    if (row == NULL) {
      PyErr_Clear();
      value_error("block_table[%zd] must be a sequence of page indices", b);
      goto done;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(row);
    if (b == 0) {
      c->p.max_pages = n;
      c->table = malloc((size_t)(batch * n > 0 ? batch * n : 1) * sizeof *c->table);
      if (c->table == NULL) {
        Py_DECREF(row);
        PyErr_NoMemory();
        goto done;
      }
    }
    if (n != c->p.max_pages || n == 0) {
      Py_DECREF(row);
      value_error("block_table[%zd] has %zd entries, block_table[0] %lld: every row has "
                  "max_pages >= 1 entries",
                  b, n, (long long)c->p.max_pages);
      goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
      PyObject *index = PyNumber_Index(PySequence_Fast_GET_ITEM(row, i));
      long long x = index != NULL ? PyLong_AsLongLong(index) : -1;
      Py_XDECREF(index);
      if ((x == -1 && PyErr_Occurred()) || x < INT32_MIN || x > INT32_MAX) {
        PyErr_Clear();
        Py_DECREF(row);
        value_error("block_table[%zd][%zd] must be an int32 page index", b, i);
        goto done;
      }
      c->table[b * n + i] = (int32_t)x;
    }
    Py_DECREF(row);
  }
  rc = 0;
done:
  Py_XDECREF(seq);
  return rc;
}

int txpy_parse_lens(txpy_call *c, const txpy_view *ref, PyObject *obj, const char *name,
                    int64_t max, const char *max_name, int64_t **out) {
  if (obj == NULL || obj == Py_None) return 0;
  c->ragged = 1;
  if (obj == Py_True && c->op == TXPY_OP_PLAN) return 0;
  PyObject *list = NULL;
  if (txpy_is_torch(obj) > 0) /* a torch tensor: iterating it would give 0-d tensors */
    obj = list = PyObject_CallMethod(obj, "tolist", NULL);
  PyObject *seq = obj != NULL ? PySequence_Fast(obj, "") : NULL;
  Py_XDECREF(list);
  if (seq == NULL) {
    PyErr_Format(PyExc_TypeError, "%s must be a sequence of ints (one per sequence); got %.100s",
                 name, obj ? Py_TYPE(obj)->tp_name : "?");
    return -1;
  }
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  if (n != c->p.batch) {
    char s[160];
    Py_DECREF(seq);
    value_error("%s has %zd lengths but the batch is %lld (%s %s): one length per sequence", name,
                n, (long long)c->p.batch, ref->name, txpy_shape_str(ref, s, sizeof s));
    return -1;
  }
  *out = malloc((size_t)(n > 0 ? n : 1) * sizeof **out);
  if (*out == NULL) {
    Py_DECREF(seq);
    PyErr_NoMemory();
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *item = PySequence_Fast_GET_ITEM(seq, i), *index = PyNumber_Index(item);
    long long len = index != NULL ? PyLong_AsLongLong(index) : -1;
    Py_XDECREF(index);
    if (len == -1 && PyErr_Occurred()) {
      if (PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s[%zd] must be an int; got %.100s", name, i,
                     Py_TYPE(item)->tp_name);
      }
      Py_DECREF(seq);
      return -1;
    }
    if (len < 0 || len > max) {
      Py_DECREF(seq);
      value_error("%s[%zd] = %lld is outside 0..%s = %lld", name, i, len, max_name, (long long)max);
      return -1;
    }
    (*out)[i] = len;
  }
  Py_DECREF(seq);
  return 0;
}

/* q_offsets (cu_seqlens) of a packed call: batch + 1 ints from 0, non-decreasing, the last q's
   rows; sets the batch. 0, or -1 with an exception. */
static int parse_q_offsets(txpy_call *c, const txpy_opts *o) {
  if (txpy_need_ndim(&c->q, 3, rhd)) return -1;
  if (o->q_lens != NULL && o->q_lens != Py_None)
    return value_error("q_lens must be None with q_offsets: the offsets give each sequence's "
                       "rows"),
           -1;
  if (o->q_offsets == Py_True && c->op == TXPY_OP_PLAN) { /* offsets with each call */
    c->ragged = 1;
    c->p.batch = o->block_table != NULL ? -1 : c->k.ndim == 4 ? c->k.shape[0] : 0;
    return 0;
  }
  Py_ssize_t n = PyObject_Length(o->q_offsets);
  if (n < 0) return -1;
  if (n < 2) return value_error("q_offsets has %zd entries: batch + 1 (at least 2), from 0", n), -1;
  const int64_t rows = c->q.shape[0];
  c->p.batch = n; /* txpy_parse_lens reads one int per entry, each in 0..rows */
  if (txpy_parse_lens(c, &c->q, o->q_offsets, "q_offsets", rows, "q's rows", &c->q_offsets))
    return -1;
  c->p.batch = n - 1;
  const int64_t *off = c->q_offsets;
  if (off[0] != 0) return value_error("q_offsets[0] = %lld must be 0", (long long)off[0]), -1;
  for (Py_ssize_t b = 1; b < n; b++)
    if (off[b] < off[b - 1])
      return value_error("q_offsets[%zd] = %lld is below q_offsets[%zd] = %lld: they are "
                         "non-decreasing (a prefix sum of the rows)",
                         b, (long long)off[b], b - 1, (long long)off[b - 1]),
             -1;
  if (off[n - 1] != rows) {
    char s[160];
    return value_error("q_offsets[-1] = %lld but %s has %lld rows (%s): the last offset is the "
                       "total",
                       (long long)off[n - 1], c->q.name, (long long)rows,
                       txpy_shape_str(&c->q, s, sizeof s)),
           -1;
  }
  return 0;
}

/* A packed view [rows, heads(, dim)] as [1, heads, rows(, dim)], the layout a packed tensor
   has for the library (its batch stride unused). */
static txpy_view packed_as4(const txpy_view *v) {
  txpy_view x = *v;
  x.ndim = v->ndim + 1;
  x.shape[0] = 1, x.shape[1] = v->shape[1], x.shape[2] = v->shape[0];
  x.strides[0] = 0, x.strides[1] = v->strides[1], x.strides[2] = v->strides[0];
  if (v->ndim == 3) x.shape[3] = v->shape[2], x.strides[3] = v->strides[2];
  return x;
}

/* The tensors for the library. Every view is non-empty here. */
static int make_tensors(txpy_call *c, txattn_tensors *t) {
  *t = (txattn_tensors)TXATTN_TENSORS_INIT;
  t->q_data = c->q.data;
  t->k_data = c->k.data;
  t->v_data = c->v.data;
  t->k_scale = c->k_scale;
  t->v_scale = c->v_scale;
  t->o_data = c->o.data;
  const txpy_view q = c->packed ? packed_as4(&c->q) : c->q,
                  o = c->packed ? packed_as4(&c->o) : c->o;
  if (txpy_view_layout(&q, &t->q_layout) || txpy_view_layout(&c->k, &t->k_layout) ||
      txpy_view_layout(&c->v, &t->v_layout) || txpy_view_layout(&o, &t->o_layout))
    return -1;
  if (c->have_lse) {
    const txpy_view lse = c->packed ? packed_as4(&c->lse) : c->lse;
    t->lse = (float *)c->lse.data;
    if (txpy_rows_layout(&lse, &t->lse_layout)) return -1;
  }
  t->q_offsets = c->q_offsets;
  t->q_lens = c->q_lens;
  t->kv_lens = c->kv_lens;
  t->alibi_slopes = c->use_slopes;
  t->sinks = c->use_sinks;
  t->block_table = c->table;
  if (c->have_mask) {
    t->mask = c->mask.data;
    t->mask_layout = c->mask_layout;
  }
  return 0;
}

/* attn_mask imported and broadcast to [batch, heads_q, n_q, n_kv] as torch broadcasts (sizes
   aligned from the right, each equal or 1; a missing or size-1 dimension takes stride 0, no
   copy); the problem's mask tensor set from its type. 0, or -1 with an exception. */
static int import_mask(txpy_call *c, PyObject *obj) {
  if (obj == NULL || obj == Py_None) return 0;
  if (txpy_import(obj, "attn_mask", TXPY_READ | TXPY_MASK, &c->mask, NULL)) return -1;
  c->have_mask = 1;
  const txpy_view *m = &c->mask;
  const int64_t full[4] = {c->p.batch, c->p.heads_q, c->p.n_q, c->p.n_kv};
  int64_t st[4] = {0, 0, 0, 0};
  if (m->ndim > 4) {
    char s[160];
    value_error("attn_mask has %d dimensions (shape %s); it must broadcast to [batch, heads_q, "
                "n_q, n_kv], at most 4",
                m->ndim, txpy_shape_str(m, s, sizeof s));
    return -1;
  }
  for (int d = 0; d < m->ndim; d++) {
    int at = 4 - m->ndim + d;
    if (m->shape[d] != full[at] && m->shape[d] != 1) {
      char s[160];
      value_error("attn_mask (shape %s) does not broadcast to [batch, heads_q, n_q, n_kv] = "
                  "(%lld, %lld, %lld, %lld): dimension %d has %lld, not %lld or 1",
                  txpy_shape_str(m, s, sizeof s), (long long)full[0], (long long)full[1],
                  (long long)full[2], (long long)full[3], d, (long long)m->shape[d],
                  (long long)full[at]);
      return -1;
    }
    st[at] = m->shape[d] == 1 ? 0 : m->strides[d];
  }
  c->mask_layout = (txattn_mask_layout){st[0], st[1], st[2], st[3]};
  c->p.mask_tensor =
      m->dtype == TXPY_DTYPE_BOOL ? TXATTN_MASK_TENSOR_BOOL : TXATTN_MASK_TENSOR_ADDITIVE;
  c->p.mask_type = m->dtype == TXPY_DTYPE_BOOL ? TXATTN_DTYPE_F32 : m->dtype;
  return 0;
}

/* A call's mask tensor (import_mask); for Context.plan, attn_mask a tensor (imported, the calls' default) or
   the name of its type ("bool", "f32", "f16", "bf16": given with each call); for a plan's call,
   a tensor of the kind and type the plan was made for, required when it was made with one and
   refused when not. 0, or -1 with an exception. */
static int call_mask(txpy_call *c, const txattn_problem *pp, PyObject *obj) {
  const int given = obj != NULL && obj != Py_None;
  if (c->op != TXPY_OP_EXECUTE) {
    if (c->op != TXPY_OP_PLAN || !given || !PyUnicode_Check(obj)) return import_mask(c, obj);
    const char *s = PyUnicode_AsUTF8(obj);
    if (s == NULL) return -1;
    static const char *const kinds[4] = {"bool", "f32", "f16", "bf16"};
    static const txattn_dtype types[4] = {TXATTN_DTYPE_F32, TXATTN_DTYPE_F32, TXATTN_DTYPE_F16,
                                          TXATTN_DTYPE_BF16};
    for (int i = 0; i < 4; i++)
      if (strcmp(s, kinds[i]) == 0) {
        c->p.mask_tensor = i == 0 ? TXATTN_MASK_TENSOR_BOOL : TXATTN_MASK_TENSOR_ADDITIVE;
        c->p.mask_type = types[i];
        return 0;
      }
    return value_error("attn_mask = '%s': a plan takes a mask tensor or its type, bool, "
                       "float32, float16 or bfloat16",
                       s),
           -1;
  }
  if (pp->mask_tensor == TXATTN_MASK_TENSOR_NONE) {
    if (given)
      return value_error("attn_mask given, but the plan was made without one: make it with "
                         "attn_mask= (the mask, or its dtype to give one with each call)"),
             -1;
    return 0;
  }
  if (!given)
    return value_error("the plan was made with a mask tensor: pass attn_mask= to each call"), -1;
  if (import_mask(c, obj)) return -1;
  if (c->p.mask_tensor != pp->mask_tensor || c->p.mask_type != pp->mask_type) {
    const char *want =
        pp->mask_tensor == TXATTN_MASK_TENSOR_BOOL ? "bool" : txpy_dtype_str(pp->mask_type);
    value_error("attn_mask is %s but the plan was made for a %s mask: make a plan for it",
                c->mask.dtype == TXPY_DTYPE_BOOL ? "bool" : txpy_dtype_str(c->mask.dtype), want);
    return -1;
  }
  return 0;
}

/* No keys at all (n_kv 0): every row sees none, so o is 0 and lse -inf, as the library defines;
   rows past a sequence's q_len are left alone, as the library leaves them. */
static void fill_no_keys(const txpy_call *c) {
  size_t esize = txattn_dtype_size(c->o.dtype);
  if (c->packed) { /* every row of the packed tensors */
    const txpy_view o = packed_as4(&c->o), lse = c->have_lse ? packed_as4(&c->lse) : c->lse;
    for (int64_t h = 0; h < o.shape[1]; h++)
      for (int64_t i = 0; i < o.shape[2]; i++) {
        memset(o.data + (size_t)(h * o.strides[1] + i * o.strides[2]) * esize, 0,
               (size_t)c->p.d_v * esize);
        if (c->have_lse) ((float *)lse.data)[h * lse.strides[1] + i * lse.strides[2]] = -INFINITY;
      }
    return;
  }
  for (int64_t b = 0; b < c->p.batch; b++) {
    int64_t rows = c->q_lens != NULL ? c->q_lens[b] : c->p.n_q;
    for (int64_t h = 0; h < c->p.heads_q; h++)
      for (int64_t i = 0; i < rows; i++) {
        const int64_t *s = c->o.strides;
        memset(c->o.data + (size_t)(b * s[0] + h * s[1] + i * s[2]) * esize, 0,
               (size_t)c->p.d_v * esize);
        if (c->have_lse) {
          const int64_t *l = c->lse.strides;
          ((float *)c->lse.data)[b * l[0] + h * l[1] + i * l[2]] = -INFINITY;
        }
      }
  }
}

/* A plan runs only tensors of the problem it was made for. */
static int check_against_plan(const txpy_call *c, const txattn_problem *pp) {
  const txattn_problem *p = &c->p;
  if (p->page_size != pp->page_size || p->n_pages != pp->n_pages || p->max_pages != pp->max_pages) {
    char sk[160];
    return value_error("the plan was made for pools of %lld pages of %lld keys and block tables "
                       "of %lld pages a sequence; got %s %s and a table of %lld: make a plan for "
                       "these (Context.plan)",
                       (long long)pp->n_pages, (long long)pp->page_size, (long long)pp->max_pages,
                       c->k.name, txpy_shape_str(&c->k, sk, sizeof sk), (long long)p->max_pages),
           -1;
  }
  int same = p->batch == pp->batch && p->heads_q == pp->heads_q && p->heads_kv == pp->heads_kv &&
             (p->n_q == pp->n_q || pp->packed) && p->n_kv == pp->n_kv && p->d_qk == pp->d_qk &&
             p->d_v == pp->d_v && p->q_type == pp->q_type && p->k_type == pp->k_type &&
             p->v_type == pp->v_type && p->o_type == pp->o_type;
  if (!same) {
    char sq[160], sk[160], sv[160];
    value_error("the plan was made for q (%lld, %lld, %lld, %lld) %s, k and v (%lld, %lld, %lld, "
                "%lld/%lld) %s/%s, out %s; got %s %s %s, %s %s %s, %s %s %s, out %s: make a plan "
                "for these shapes (Context.plan)",
                (long long)pp->batch, (long long)pp->heads_q, (long long)pp->n_q,
                (long long)pp->d_qk, txpy_dtype_str(pp->q_type), (long long)pp->batch,
                (long long)pp->heads_kv, (long long)pp->n_kv, (long long)pp->d_qk,
                (long long)pp->d_v, txpy_dtype_str(pp->k_type), txpy_dtype_str(pp->v_type),
                txpy_dtype_str(pp->o_type), c->q.name, txpy_shape_str(&c->q, sq, sizeof sq),
                txpy_dtype_str(p->q_type), c->k.name, txpy_shape_str(&c->k, sk, sizeof sk),
                txpy_dtype_str(p->k_type), c->v.name, txpy_shape_str(&c->v, sv, sizeof sv),
                txpy_dtype_str(p->v_type), txpy_dtype_str(p->o_type));
    return -1;
  }
  if (pp->packed && p->n_q > pp->n_q)
    return value_error("q_offsets give a sequence %lld rows, but the plan was made for at most "
                       "%lld (its q_offsets' longest sequence, or q's rows): make a plan for "
                       "longer sequences",
                       (long long)p->n_q, (long long)pp->n_q),
           -1;
  if (p->lse != pp->lse) {
    value_error(pp->lse ? "the plan was made with return_lse=True: pass an lse output"
                        : "the plan was made without return_lse: it writes no lse");
    return -1;
  }
  if (c->ragged && !pp->ragged) {
    value_error("q_lens/kv_lens given, but the plan was made for a dense batch: make it with "
                "ragged=True (or with lengths)");
    return -1;
  }
  return 0;
}

/* The score modifiers into c->p and the slopes and sink logits the call passes: o's for
   attention, reference, the bound and plans (Py_True for a plan: its calls give them); for a plan's
   call, its own or else those given to Context.plan, and only for a plan made with them. */
static int set_modifiers(txpy_call *c, PyObject *target, const txpy_opts *o) {
  static const char *const names[2] = {"alibi_slopes", "sinks"};
  PyObject *objs[2] = {o->alibi_slopes, o->sinks};
  float **owned[2] = {&c->alibi_slopes, &c->sinks};
  const float **use[2] = {&c->use_slopes, &c->use_sinks};
  const txpy_plan *plan = c->op == TXPY_OP_EXECUTE ? (const txpy_plan *)target : NULL;
  if (plan == NULL) {
    c->p.softcap = o->softcap;
    c->p.sink_keys = o->sink_keys;
    c->p.alibi = objs[0] != NULL && objs[0] != Py_None;
    c->p.sinks = objs[1] != NULL && objs[1] != Py_None;
  }
  for (int w = 0; w < 2; w++) {
    int on = w == 0 ? c->p.alibi : c->p.sinks;
    PyObject *x = objs[w];
    if (x == NULL || x == Py_None) {
      *use[w] = plan == NULL ? NULL : w == 0 ? plan->alibi_slopes : plan->sinks;
      if (on && plan != NULL && *use[w] == NULL)
        return value_error("the plan was made with %s=True: pass %s= to each call", names[w],
                           names[w]),
               -1;
    } else if (!on) {
      return value_error("%s given, but the plan was made without it: make it with %s= (the "
                         "values, or True to give them with each call)",
                         names[w], names[w]),
             -1;
    } else if (x == Py_True && c->op == TXPY_OP_PLAN) {
      *use[w] = NULL; /* given with each call */
    } else {
      if (txpy_head_floats(x, names[w], c->p.heads_q, &c->q, w == 1, owned[w])) return -1;
      *use[w] = *owned[w];
    }
  }
  return 0;
}

/* k_scale and v_scale: heads_kv floats each for an fp8 cache (the library checks their range),
   none for any other type. */
static int kv_scales(txpy_call *c, const txpy_opts *o) {
  PyObject *objs[2] = {o->k_scale, o->v_scale};
  float **out[2] = {&c->k_scale, &c->v_scale};
  const txpy_view *views[2] = {&c->k, &c->v};
  const int fp8 = c->kv_dtype == TXATTN_DTYPE_E4M3 || c->kv_dtype == TXATTN_DTYPE_E5M2;
  for (int w = 0; w < 2; w++) {
    const char *name = w == 0 ? "k_scale" : "v_scale";
    const int given = objs[w] != NULL && objs[w] != Py_None;
    if (given != fp8)
      return value_error(!fp8 ? "%s given, but only kv_dtype 'e4m3' or 'e5m2' takes scales (%s)"
                         : c->op == TXPY_OP_PLAN
                             ? "kv_dtype '%s' needs %s= (heads_kv fp32 scales or one float, the "
                               "calls' default; or True to give them with each call)"
                         : c->op == TXPY_OP_EXECUTE
                             ? "the plan was made for kv_dtype '%s' without scales: pass %s= to "
                               "each call (heads_kv fp32 scales, or one float)"
                             : "kv_dtype '%s' needs %s= (heads_kv fp32 scales, or one float)",
                         fp8 ? txattn_dtype_name((txattn_dtype)c->kv_dtype) : name,
                         fp8 ? name : "q8_0 and q4_0 blocks carry their own"),
             -1;
    if (!given || (objs[w] == Py_True && c->op == TXPY_OP_PLAN)) continue;
    if (PyFloat_Check(objs[w]) || PyLong_Check(objs[w])) { /* one scale for every head */
      const double x = PyFloat_AsDouble(objs[w]);
      if (x == -1.0 && PyErr_Occurred()) return -1;
      if (!(*out[w] = malloc((size_t)(c->p.heads_kv > 0 ? c->p.heads_kv : 1) * sizeof(float))))
        return PyErr_NoMemory(), -1;
      for (int64_t h = 0; h < c->p.heads_kv; h++) (*out[w])[h] = (float)x;
    } else if (txpy_head_floats(objs[w], name, c->p.heads_kv, views[w], 0, out[w])) {
      return -1;
    }
  }
  return 0;
}

static PyObject *new_plan(txpy_call *c, PyObject *context, const txpy_opts *o) {
  txattn_plan *plan = NULL;
  PyThreadState *unlocked = PyEval_SaveThread();
  txattn_status s = txattn_plan_create(((txpy_context *)context)->ctx, &c->p, o->kernel, &plan);
  PyEval_RestoreThread(unlocked);
  if (s != TXATTN_OK) return txpy_raise_status(s, txattn_last_error());
  txpy_plan *self = PyObject_New(txpy_plan, &txpy_plan_type);
  if (self == NULL) {
    txattn_plan_free(plan);
    return NULL;
  }
  self->plan = plan;
  self->vectorcall = txpy_plan_vectorcall;
  self->context = Py_NewRef(context);
  self->q_lens = o->q_lens != NULL && o->q_lens != Py_True ? Py_NewRef(o->q_lens) : NULL;
  self->kv_lens = o->kv_lens != NULL && o->kv_lens != Py_True ? Py_NewRef(o->kv_lens) : NULL;
  self->alibi_slopes = c->alibi_slopes; /* the calls' default, now the plan's */
  self->sinks = c->sinks;
  c->alibi_slopes = c->sinks = NULL;
  self->attn_mask = c->have_mask ? Py_NewRef(o->attn_mask) : NULL;
  /* held as given and read by each call that gives none of its own */
  self->block_table = c->table != NULL ? Py_NewRef(o->block_table) : NULL;
  self->q_offsets = c->q_offsets != NULL ? Py_NewRef(o->q_offsets) : NULL;
  self->k_scale = c->k_scale != NULL ? Py_NewRef(o->k_scale) : NULL;
  self->v_scale = c->v_scale != NULL ? Py_NewRef(o->v_scale) : NULL;
  self->problem = (txattn_problem)TXATTN_PROBLEM_INIT; /* PyObject_New does not zero it */
  if (txattn_problem_resolve(&c->p, &self->problem) != TXATTN_OK) self->problem = c->p;
  return (PyObject *)self;
}

/* The library's call for op, with the GIL released. */
static PyObject *dispatch(txpy_call *c, PyObject *target, const char *kernel) {
  txattn_tensors t = TXATTN_TENSORS_INIT;
  if (make_tensors(c, &t)) return NULL;
  txattn_status s = TXATTN_OK;
  double bound = 0, abs_bound = 0, rel_bound = 0;
  int want_lse_bound = c->p.lse;
  PyThreadState *unlocked = PyEval_SaveThread();
  switch (c->op) {
  case TXPY_OP_ATTENTION:
    if (kernel == NULL) {
      s = txattn_attention(((txpy_context *)target)->ctx, &c->p, &t);
    } else {
      txattn_plan *plan = NULL;
      s = txattn_plan_create(((txpy_context *)target)->ctx, &c->p, kernel, &plan);
      if (s == TXATTN_OK) s = txattn_plan_execute(plan, &t);
      txattn_plan_free(plan);
    }
    break;
  case TXPY_OP_EXECUTE:
    s = txattn_plan_execute(((txpy_plan *)target)->plan, &t);
    break;
  case TXPY_OP_REFERENCE:
    s = txattn_reference(&c->p, &t);
    break;
  case TXPY_OP_BOUND:
    c->p.lse = 0;
    s = txattn_error_bound(&c->p, &t, &bound);
    if (s == TXATTN_OK && want_lse_bound)
      s = txattn_lse_error_bound(&c->p, &t, &abs_bound, &rel_bound);
    break;
  }
  PyEval_RestoreThread(unlocked);
  if (s != TXATTN_OK) return txpy_raise_status(s, txattn_last_error());
  if (c->op == TXPY_OP_BOUND)
    return want_lse_bound ? Py_BuildValue("(ddd)", bound, abs_bound, rel_bound)
                          : PyFloat_FromDouble(bound);
  Py_RETURN_NONE;
}

static PyObject *zero_bound(const txpy_call *c) {
  return c->p.lse ? Py_BuildValue("(ddd)", 0.0, 0.0, 0.0) : PyFloat_FromDouble(0.0);
}

PyObject *txpy_call_run(txpy_call *c, PyObject *target, const txpy_opts *o) {
  if (c->op == TXPY_OP_BOUND || c->op == TXPY_OP_PLAN)
    c->p.lse = o->lse;
  else
    c->p.lse = c->have_lse;
  if (c->packed && parse_q_offsets(c, o)) return NULL;
  if (o->block_table != NULL && parse_block_table(c, o->block_table)) return NULL;
  if (check_shapes(c) ||
      txpy_parse_lens(c, &c->q, o->q_lens, "q_lens", c->p.n_q, "n_q", &c->q_lens) ||
      txpy_parse_lens(c, &c->k, o->kv_lens, "kv_lens", c->p.n_kv, "n_kv", &c->kv_lens))
    return NULL;
  c->p.ragged = c->ragged;
  /* the call's own sizes: a packed plan's n_q is its longest sequence, not this call's */
  const int empty = c->p.batch == 0 || c->p.heads_q == 0 || c->p.n_q == 0;
  if (c->op == TXPY_OP_EXECUTE) {
    const txattn_problem *pp = &((txpy_plan *)target)->problem;
    if (check_against_plan(c, pp)) return NULL;
    c->p = *pp;
    if (call_mask(c, pp, o->attn_mask)) return NULL;
  } else {
    c->p.mask = (txattn_mask)o->mask;
    c->p.window_left = o->mask == TXATTN_MASK_WINDOW ? o->window_left : 0;
    c->p.window_right = o->mask == TXATTN_MASK_WINDOW ? o->window_right : 0;
    c->p.scale = o->scale;
    if (call_mask(c, NULL, o->attn_mask)) return NULL;
  }
  if (set_modifiers(c, target, o) || kv_scales(c, o)) return NULL;
  if (c->op == TXPY_OP_PLAN) {
    if (empty || c->p.n_kv == 0) {
      char sq[160], sk[160];
      return value_error("cannot plan an empty problem: %s has shape %s and %s %s", c->q.name,
                         txpy_shape_str(&c->q, sq, sizeof sq), c->k.name,
                         txpy_shape_str(&c->k, sk, sizeof sk));
    }
    return new_plan(c, target, o);
  }
  if (empty) /* nothing to compute */
    return c->op == TXPY_OP_BOUND ? zero_bound(c) : Py_NewRef(Py_None);
  if (c->p.n_kv == 0) { /* every row sees no key: exact zeros, and no error to bound */
    if (c->op == TXPY_OP_BOUND) return zero_bound(c);
    /* what the library would refuse, refused here too (k and v are empty) */
    if (txpy_views_overlap(&c->o, &c->q) ||
        (c->have_lse && (txpy_views_overlap(&c->lse, &c->q) || txpy_views_overlap(&c->lse, &c->o))))
      return txpy_raise_status(TXATTN_E_INVALID, "the output overlaps q, or lse overlaps q or o");
    fill_no_keys(c);
    Py_RETURN_NONE;
  }
  return dispatch(c, target, o->kernel);
}

PyObject *txpy_call_result(txpy_call *c, int want_lse) {
  if (!want_lse) return Py_NewRef(c->o_obj);
  return PyTuple_Pack(2, c->o_obj, c->lse_obj);
}

/* ---- merge ----------------------------------------------------------------------------------- */

/* Imports part i of a merge, o and lse, checked against out; 0, or -1 with nothing held. */
static int import_part(const txpy_view *out, PyObject *o_obj, PyObject *lse_obj, char *o_name,
                       char *lse_name, txpy_view *o, txpy_view *l) {
  char so[160], sp[160];
  if (txpy_import(o_obj, o_name, TXPY_READ, o, NULL)) return -1;
  if (txpy_import(lse_obj, lse_name, TXPY_READ | TXPY_ROWS, l, NULL)) {
    txpy_view_release(o);
    return -1;
  }
  if (o->ndim != 4 || memcmp(o->shape, out->shape, sizeof o->shape[0] * 4) != 0 ||
      o->dtype != out->dtype)
    value_error("%s has shape %s and dtype %s but out has shape %s and dtype %s: every part "
                "and the result share both",
                o->name, txpy_shape_str(o, sp, sizeof sp), txpy_dtype_str(o->dtype), out->name,
                txpy_shape_str(out, so, sizeof so), txpy_dtype_str(out->dtype));
  else if (l->ndim != 3 || memcmp(l->shape, out->shape, sizeof l->shape[0] * 3) != 0 ||
           l->dtype != TXATTN_DTYPE_F32)
    value_error("%s has shape %s and dtype %s; it must be float32 of shape (%lld, %lld, %lld), "
                "[batch, heads, rows] of %s %s",
                l->name, txpy_shape_str(l, sp, sizeof sp), txpy_dtype_str(l->dtype),
                (long long)out->shape[0], (long long)out->shape[1], (long long)out->shape[2],
                o->name, txpy_shape_str(o, so, sizeof so));
  else
    return 0;
  txpy_view_release(o);
  txpy_view_release(l);
  return -1;
}

/* _merge(outputs, lses, out, lse_out, q_lens, sinks): txattn_merge of the parts (o_i, lse_i)
   into out (and lse_out unless None), applying the sink logits (None: none) once. */
PyObject *txpy_merge(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (nargs != 6) {
    PyErr_SetString(PyExc_TypeError, "_merge takes 6 arguments");
    return NULL;
  }
  PyObject *outs = PySequence_Fast(args[0], "outputs must be a sequence of arrays");
  PyObject *lses = outs ? PySequence_Fast(args[1], "lses must be a sequence of arrays") : NULL;
  Py_ssize_t n = outs && lses ? PySequence_Fast_GET_SIZE(outs) : 0;
  txpy_view *parts = NULL; /* n o views, then n lse views */
  txattn_tensors *pt = NULL;
  char(*names)[32] = NULL;
  txpy_call c;
  txpy_call_init(&c, TXPY_OP_REFERENCE);
  PyObject *result = NULL;
  Py_ssize_t imported = 0;
  if (lses == NULL) goto done;
  if (n == 0 || PySequence_Fast_GET_SIZE(lses) != n) {
    value_error("merge takes as many lses as outputs, at least one; got %zd outputs and %zd lses",
                n, PySequence_Fast_GET_SIZE(lses));
    goto done;
  }
  parts = calloc((size_t)n * 2, sizeof *parts);
  pt = calloc((size_t)n, sizeof *pt);
  names = calloc((size_t)n * 2, sizeof *names);
  if (parts == NULL || pt == NULL || names == NULL) {
    PyErr_NoMemory();
    goto done;
  }
  if (txpy_import(args[2], "out", TXPY_WRITE, &c.o, NULL)) goto done;
  if (args[3] != Py_None) {
    if (txpy_import(args[3], "lse out", TXPY_WRITE | TXPY_ROWS, &c.lse, NULL)) goto done;
    c.have_lse = 1;
  }
  c.have_o = 1;
  char so[160], sp[160];
  if (txpy_need_ndim(&c.o, 4, bhnd)) goto done;
  for (; imported < n; imported++) {
    snprintf(names[imported], sizeof names[0], "outputs[%zd]", imported);
    snprintf(names[n + imported], sizeof names[0], "lses[%zd]", imported);
    if (import_part(&c.o, PySequence_Fast_GET_ITEM(outs, imported),
                    PySequence_Fast_GET_ITEM(lses, imported), names[imported], names[n + imported],
                    &parts[imported], &parts[n + imported]))
      goto done;
  }
  if (c.have_lse && (c.lse.ndim != 3 || memcmp(c.lse.shape, c.o.shape, sizeof c.o.shape[0] * 3) ||
                     c.lse.dtype != TXATTN_DTYPE_F32)) {
    value_error("lse out has shape %s and dtype %s; it must be float32 of shape (%lld, %lld, "
                "%lld), [batch, heads, rows] of out %s",
                txpy_shape_str(&c.lse, sp, sizeof sp), txpy_dtype_str(c.lse.dtype),
                (long long)c.o.shape[0], (long long)c.o.shape[1], (long long)c.o.shape[2],
                txpy_shape_str(&c.o, so, sizeof so));
    goto done;
  }
  c.p.batch = c.o.shape[0];
  c.p.heads_q = c.p.heads_kv = c.o.shape[1];
  c.p.n_q = c.p.n_kv = c.o.shape[2];
  c.p.d_qk = c.p.d_v = c.o.shape[3];
  c.p.q_type = c.p.k_type = c.p.v_type = c.p.o_type = c.o.dtype;
  if (txpy_parse_lens(&c, &c.o, args[4], "q_lens", c.p.n_q, "n_q", &c.q_lens)) goto done;
  c.p.ragged = c.ragged;
  if (args[5] != Py_None) {
    if (txpy_head_floats(args[5], "sinks", c.p.heads_q, &c.o, 1, &c.sinks)) goto done;
    c.p.sinks = 1;
  }
  if (c.p.batch == 0 || c.p.heads_q == 0 || c.p.n_q == 0) {
    result = Py_NewRef(Py_None);
    goto done;
  }
  if (c.p.d_v == 0) {
    value_error("out has dim 0: d_v must be at least 1");
    goto done;
  }
  txattn_tensors out = TXATTN_TENSORS_INIT;
  out.o_data = c.o.data;
  out.q_lens = c.q_lens;
  out.sinks = c.sinks;
  if (txpy_view_layout(&c.o, &out.o_layout)) goto done;
  if (c.have_lse) {
    out.lse = (float *)c.lse.data;
    if (txpy_rows_layout(&c.lse, &out.lse_layout)) goto done;
  }
  for (Py_ssize_t w = 0; w < n; w++) {
    pt[w] = (txattn_tensors)TXATTN_TENSORS_INIT;
    pt[w].o_data = parts[w].data;
    pt[w].lse = (float *)parts[n + w].data;
    if (txpy_view_layout(&parts[w], &pt[w].o_layout) ||
        txpy_rows_layout(&parts[n + w], &pt[w].lse_layout))
      goto done;
  }
  PyThreadState *unlocked = PyEval_SaveThread();
  txattn_status s = txattn_merge(&c.p, pt, (size_t)n, &out);
  PyEval_RestoreThread(unlocked);
  if (s != TXATTN_OK) {
    txpy_raise_status(s, txattn_last_error());
    goto done;
  }
  result = Py_NewRef(Py_None);
done:
  for (Py_ssize_t i = 0; parts != NULL && i < imported; i++) {
    txpy_view_release(&parts[i]);
    txpy_view_release(&parts[n + i]);
  }
  free(parts);
  free(pt);
  free(names);
  txpy_call_release(&c);
  Py_XDECREF(outs);
  Py_XDECREF(lses);
  return result;
}

static PyObject *side(int64_t w) {
  return w == TXATTN_UNBOUNDED ? Py_NewRef(Py_None) : PyLong_FromLongLong(w);
}

PyObject *txpy_problem_dict(const txattn_problem *p) {
  PyObject *window = p->mask == TXATTN_MASK_WINDOW
                         ? Py_BuildValue("(NN)", side(p->window_left), side(p->window_right))
                         : Py_NewRef(Py_None);
  if (window == NULL) return NULL;
  PyObject *softcap = p->softcap > 0.0f ? PyFloat_FromDouble(p->softcap) : Py_NewRef(Py_None);
  if (softcap == NULL) {
    Py_DECREF(window);
    return NULL;
  }
  /* the mask tensor's kind: None, "bool", or the additive mask's type */
  const char *mask_tensor = p->mask_tensor == TXATTN_MASK_TENSOR_BOOL ? "bool"
                            : p->mask_tensor == TXATTN_MASK_TENSOR_ADDITIVE
                                ? txattn_dtype_name(p->mask_type)
                                : NULL;
  return Py_BuildValue(
      "{s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:s,s:N,s:d,s:(ssss),s:O,s:O,s:N,s:O,s:O,s:L,s:z,s:L,s:L,s:L,"
      "s:O}",
      "batch", (long long)p->batch, "heads_q", (long long)p->heads_q, "heads_kv",
      (long long)p->heads_kv, "n_q", (long long)p->n_q, "n_kv", (long long)p->n_kv, "d_qk",
      (long long)p->d_qk, "d_v", (long long)p->d_v, "mask", txattn_mask_name(p->mask), "window",
      window, "scale", (double)p->scale, "dtypes", txattn_dtype_name(p->q_type),
      txattn_dtype_name(p->k_type), txattn_dtype_name(p->v_type), txattn_dtype_name(p->o_type),
      "lse", p->lse ? Py_True : Py_False, "ragged", p->ragged ? Py_True : Py_False, "softcap",
      softcap, "alibi", p->alibi ? Py_True : Py_False, "sinks", p->sinks ? Py_True : Py_False,
      "sink_keys", (long long)p->sink_keys, "mask_tensor", mask_tensor, "page_size",
      (long long)p->page_size, "max_pages", (long long)p->max_pages, "n_pages",
      (long long)p->n_pages, "packed", p->packed ? Py_True : Py_False);
}
