/* SPDX-License-Identifier: MIT */
/* Importing tensors from Python: the buffer protocol (NumPy and anything else that exports one)
 * and DLPack (anything with __dlpack__, and capsules). Every check a tensor needs on its own is made
 * here, before the caller ever builds a txattn_tensors from it. */
#include "views.h"

#include <stdio.h>
#include <string.h>

#define DL_CPU    1
#define DL_FLOAT  2
#define DL_BFLOAT 4

static const char contiguous_hint[] =
    "make it contiguous first (np.ascontiguousarray(x) or x.contiguous())";

const char *txpy_shape_str(const txpy_view *v, char *buf, size_t size) {
  size_t used = (size_t)snprintf(buf, size, "(");
  for (int i = 0; i < v->ndim && used < size; i++)
    used +=
        (size_t)snprintf(buf + used, size - used, "%s%lld", i ? ", " : "", (long long)v->shape[i]);
  if (used < size) snprintf(buf + used, size - used, v->ndim == 1 ? ",)" : ")");
  return buf;
}

int64_t txpy_view_count(const txpy_view *v) {
  int64_t n = 1;
  for (int i = 0; i < v->ndim; i++) n *= v->shape[i];
  return n;
}

void txpy_view_release(txpy_view *v) {
  if (v->has_buffer) PyBuffer_Release(&v->buffer);
  v->has_buffer = 0;
  if (v->managed != NULL && v->managed->deleter != NULL) v->managed->deleter(v->managed);
  v->managed = NULL;
  v->data = NULL;
}

/* The buffer protocol's struct format of one element, or -1 */
static int dtype_of_format(const char *format, Py_ssize_t itemsize) {
  if (format == NULL) format = "B";
  if (format[0] == '<' || format[0] == '=' || format[0] == '@') format++;
  if (strcmp(format, "f") == 0 && itemsize == 4) return TXATTN_DTYPE_F32;
  if (strcmp(format, "e") == 0 && itemsize == 2) return TXATTN_DTYPE_F16;
  if (strcmp(format, "?") == 0 && itemsize == 1) return (int)TXPY_DTYPE_BOOL;
  if (strcmp(format, "B") == 0 && itemsize == 1) return (int)TXPY_DTYPE_U8;
  return -1;
}

/* The NumPy name of a buffer protocol format, for messages: into buf */
static const char *format_name(const char *format, char *buf, size_t size) {
  static const struct {
    const char *f, *name;
  } known[] = {{"f", "float32"},    {"e", "float16"}, {"d", "float64"}, {"g", "float128"},
               {"?", "bool"},       {"b", "int8"},    {"B", "uint8"},   {"h", "int16"},
               {"H", "uint16"},     {"i", "int32"},   {"I", "uint32"},  {"l", "int64"},
               {"L", "uint64"},     {"q", "int64"},   {"Q", "uint64"},  {"Zf", "complex64"},
               {"Zd", "complex128"}};
  if (format == NULL) return "uint8";
  int swapped = format[0] == '>' || format[0] == '!';
  if (swapped || format[0] == '<' || format[0] == '=' || format[0] == '@') format++;
  const char *name = format;
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (strcmp(format, known[i].f) == 0) name = known[i].name;
  snprintf(buf, size, "%s%s", name, swapped ? " (big-endian)" : "");
  return buf;
}

static int dtype_error(const char *name, const char *got) {
  PyErr_Format(PyExc_ValueError,
               "%s has dtype %s; txattn takes float32, float16 or bfloat16 (bfloat16 through "
               "DLPack, as torch tensors carry it): convert it, e.g. %s.astype(np.float32) or "
               "%s.float()",
               name, got, name, name);
  return -1;
}

static int from_buffer(PyObject *obj, const char *name, int flags, txpy_view *v) {
  int want = (flags & TXPY_WRITE) ? PyBUF_RECORDS : PyBUF_RECORDS_RO;
  if (PyObject_GetBuffer(obj, &v->buffer, want) != 0) {
    /* NumPy says ValueError, the buffer protocol BufferError */
    if ((flags & TXPY_WRITE) &&
        (PyErr_ExceptionMatches(PyExc_BufferError) || PyErr_ExceptionMatches(PyExc_ValueError))) {
      PyErr_Clear();
      PyErr_Format(PyExc_ValueError, "%s is read-only: txattn writes its results there", name);
    }
    return -1;
  }
  v->has_buffer = 1;
  Py_buffer *b = &v->buffer;
  int dtype = dtype_of_format(b->format, b->itemsize);
  char got[64];
  if (dtype < 0) return dtype_error(name, format_name(b->format, got, sizeof got));
  v->dtype = (txattn_dtype)dtype;
  if (b->ndim > TXPY_MAX_DIMS) {
    PyErr_Format(PyExc_ValueError, "%s has %d dimensions; at most %d are taken", name, b->ndim,
                 TXPY_MAX_DIMS);
    return -1;
  }
  v->ndim = b->ndim;
  v->data = b->buf;
  for (int i = 0; i < b->ndim; i++) {
    Py_ssize_t stride = b->strides[i]; /* PyBUF_RECORDS always asks for strides */
    v->shape[i] = b->shape[i];
    if (stride < 0 && b->shape[i] > 1) {
      PyErr_Format(PyExc_ValueError,
                   "%s has a negative stride in dimension %d (a reversed view), which txattn "
                   "cannot address: %s",
                   name, i, contiguous_hint);
      return -1;
    }
    if (stride % b->itemsize != 0) {
      PyErr_Format(PyExc_ValueError,
                   "%s has a stride of %zd bytes in dimension %d, not a whole number of its "
                   "%zd-byte elements: %s",
                   name, stride, i, b->itemsize, contiguous_hint);
      return -1;
    }
    v->strides[i] = stride < 0 ? 0 : stride / b->itemsize;
  }
  return 0;
}

/* Takes the DLManagedTensor out of a "dltensor" capsule, which is then renamed "used_dltensor" so
   that its producer's destructor no longer frees it: v->managed's deleter does, at release. */
static int from_capsule(PyObject *capsule, const char *name, txpy_view *v) {
  txpy_dl_managed *m = PyCapsule_GetPointer(capsule, "dltensor");
  if (m == NULL) return -1;
  if (PyCapsule_SetName(capsule, "used_dltensor") != 0) return -1;
  v->managed = m;
  const txpy_dl_tensor *t = &m->dl_tensor;
  if (t->device.device_type != DL_CPU) {
    PyErr_Format(PyExc_ValueError,
                 "%s is not on the CPU (DLPack device type %d): txattn runs on the CPU; move it "
                 "with .cpu()",
                 name, (int)t->device.device_type);
    return -1;
  }
  const txpy_dl_dtype d = t->dtype;
  if (d.lanes == 1 && d.code == DL_FLOAT && d.bits == 32)
    v->dtype = TXATTN_DTYPE_F32;
  else if (d.lanes == 1 && d.code == DL_FLOAT && d.bits == 16)
    v->dtype = TXATTN_DTYPE_F16;
  else if (d.lanes == 1 && d.code == DL_BFLOAT && d.bits == 16)
    v->dtype = TXATTN_DTYPE_BF16;
  else if (d.lanes == 1 && d.code == 6 && d.bits == 8) /* kDLBool */
    v->dtype = TXPY_DTYPE_BOOL;
  else if (d.lanes == 1 && d.code == 1 && d.bits == 8) /* kDLUInt: an 8-bit cache's bytes */
    v->dtype = TXPY_DTYPE_U8;
  else {
    static const char *const codes[] = {"int",    "uint",    "float", "opaque",
                                        "bfloat", "complex", "bool"};
    char got[64];
    snprintf(got, sizeof got, "%s%d%s", d.code < 7 ? codes[d.code] : "code?", (int)d.bits,
             d.lanes == 1 ? "" : "xN");
    return dtype_error(name, got);
  }
  if (t->ndim < 0 || t->ndim > TXPY_MAX_DIMS) {
    PyErr_Format(PyExc_ValueError, "%s has %d dimensions; at most %d are taken", name, (int)t->ndim,
                 TXPY_MAX_DIMS);
    return -1;
  }
  v->ndim = t->ndim;
  int64_t compact = 1;
  for (int i = t->ndim - 1; i >= 0; i--) {
    v->shape[i] = t->shape[i];
    int64_t stride = t->strides != NULL ? t->strides[i] : compact;
    if (t->shape[i] < 0 || (stride < 0 && t->shape[i] > 1)) {
      PyErr_Format(PyExc_ValueError,
                   "%s has a negative %s in dimension %d, which txattn cannot address: %s", name,
                   t->shape[i] < 0 ? "size" : "stride", i, contiguous_hint);
      return -1;
    }
    v->strides[i] = stride < 0 ? 0 : stride;
    compact *= t->shape[i];
  }
  v->data = t->data != NULL ? (char *)t->data + t->byte_offset : NULL;
  return 0;
}

static int from_dlpack(PyObject *obj, const char *name, txpy_view *v) {
  PyObject *capsule = PyObject_CallMethod(obj, "__dlpack__", NULL);
  if (capsule == NULL) return -1;
  int rc = from_capsule(capsule, name, v);
  Py_DECREF(capsule);
  return rc;
}

/* A (shape, dtype name) pair for a plan made from shapes: no data. */
static int from_spec(PyObject *obj, const char *name, int flags, txpy_view *v) {
  PyObject *shape = PyTuple_GET_ITEM(obj, 0), *dtype = PyTuple_GET_ITEM(obj, 1);
  if (!PyTuple_Check(shape) || !PyUnicode_Check(dtype)) {
    PyErr_Format(PyExc_TypeError, "%s: a shape must be a tuple of ints", name);
    return -1;
  }
  Py_ssize_t n = PyTuple_GET_SIZE(shape);
  if (n > TXPY_MAX_DIMS) {
    PyErr_Format(PyExc_ValueError, "%s has %zd dimensions; at most %d are taken", name, n,
                 TXPY_MAX_DIMS);
    return -1;
  }
  v->ndim = (int)n;
  for (Py_ssize_t i = 0; i < n; i++) {
    long long s = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, i));
    if (s == -1 && PyErr_Occurred()) return -1;
    if (s < 0) {
      PyErr_Format(PyExc_ValueError, "%s has a negative size %lld in dimension %zd", name, s, i);
      return -1;
    }
    v->shape[i] = s;
  }
  const char *d = PyUnicode_AsUTF8(dtype);
  if (d == NULL) return -1;
  if (strcmp(d, "f32") == 0)
    v->dtype = TXATTN_DTYPE_F32;
  else if (strcmp(d, "f16") == 0)
    v->dtype = TXATTN_DTYPE_F16;
  else if (strcmp(d, "bf16") == 0)
    v->dtype = TXATTN_DTYPE_BF16;
  else if (strcmp(d, "u8") == 0 && (flags & TXPY_KV8)) /* an 8-bit cache's bytes */
    v->dtype = TXPY_DTYPE_U8;
  else
    return dtype_error(name, d);
  int64_t compact = 1;
  for (int i = v->ndim - 1; i >= 0; i--) {
    v->strides[i] = compact;
    compact *= v->shape[i];
  }
  v->spec = 1;
  return 0;
}

/* What every use needs of a tensor beyond its type: the last dimension contiguous, and the element
   pointer aligned (the buffer protocol allows neither to be otherwise). */
size_t txpy_elem_size(const txpy_view *v) {
  return v->dtype == TXPY_DTYPE_BOOL || v->dtype == TXPY_DTYPE_U8 ||
                 v->dtype == TXATTN_DTYPE_Q8_0 || v->dtype == TXATTN_DTYPE_Q4_0
             ? 1 /* a block's alignment is the library's to check */
             : txattn_dtype_size(v->dtype);
}

int txpy_view_check(const txpy_view *v, const char *name, int flags) {
  if (v->dtype == TXPY_DTYPE_BOOL && !(flags & TXPY_MASK)) return dtype_error(name, "bool");
  if (v->dtype == TXPY_DTYPE_U8 && !(flags & TXPY_KV8))
    return PyErr_Format(PyExc_ValueError,
                        "%s has dtype uint8: an 8-bit or 4-bit K/V cache is k or v with kv_dtype "
                        "'q8_0', 'e4m3', 'e5m2' or 'q4_0' (txattn.quantize makes one); else "
                        "convert it, "
                        "e.g. %s.astype(np.float32)",
                        name, name),
           -1;
  if (txpy_view_count(v) == 0) return 0;
  if (!(flags & (TXPY_ROWS | TXPY_MASK)) && v->ndim >= 1 && v->shape[v->ndim - 1] > 1 &&
      v->strides[v->ndim - 1] != 1) {
    char shape[160];
    PyErr_Format(PyExc_ValueError,
                 "%s (shape %s) has a stride of %lld elements in its last dimension; txattn "
                 "addresses every other dimension through strides but needs the last one "
                 "contiguous (stride 1): %s",
                 name, txpy_shape_str(v, shape, sizeof shape), (long long)v->strides[v->ndim - 1],
                 contiguous_hint);
    return -1;
  }
  if (v->data == NULL || (uintptr_t)v->data % txpy_elem_size(v) != 0) {
    PyErr_Format(PyExc_ValueError,
                 "%s's data at %p is not aligned to its %zu-byte elements: copy it into a fresh "
                 "array (np.ascontiguousarray(x) or x.clone())",
                 name, (void *)v->data, txpy_elem_size(v));
    return -1;
  }
  return 0;
}

int txpy_view_import(PyObject *obj, const char *name, int flags, txpy_view *v) {
  memset(v, 0, sizeof *v);
  v->name = name;
  int rc;
  if (PyCapsule_CheckExact(obj)) {
    if (!PyCapsule_IsValid(obj, "dltensor")) {
      PyErr_Format(PyExc_ValueError,
                   "%s is a capsule that is not an unused DLPack \"dltensor\" (each capsule can "
                   "be consumed once)",
                   name);
      return -1;
    }
    rc = from_capsule(obj, name, v);
  } else if (PyObject_CheckBuffer(obj)) {
    rc = from_buffer(obj, name, flags, v);
  } else if ((flags & TXPY_SPEC_OK) && PyTuple_Check(obj) && PyTuple_GET_SIZE(obj) == 2) {
    return from_spec(obj, name, flags, v);
  } else if (PyObject_HasAttrString(obj, "__dlpack__")) {
    rc = from_dlpack(obj, name, v);
  } else {
    PyErr_Format(PyExc_TypeError,
                 "%s must be a NumPy array, a torch tensor or another object with the buffer "
                 "protocol or __dlpack__; got %.100s",
                 name, Py_TYPE(obj)->tp_name);
    return -1;
  }
  if (rc == 0) rc = txpy_view_check(v, name, flags);
  if (rc != 0) txpy_view_release(v);
  return rc;
}

int txpy_view_layout(const txpy_view *v, txattn_layout *out) {
  int64_t s[3], canonical = v->ndim > 3 ? v->shape[3] : 1;
  if (canonical < 1) canonical = 1;
  for (int d = 2; d >= 0; d--) {
    /* a dimension of one index is never stepped through: any stride addresses it */
    s[d] = v->shape[d] > 1 ? v->strides[d] : canonical;
    canonical *= v->shape[d] > 1 ? v->shape[d] : 1;
  }
  if (s[0] == 0 && s[1] == 0 && s[2] == 0) {
    char shape[160];
    PyErr_Format(PyExc_ValueError,
                 "%s (shape %s) repeats one row through every batch, head and row (strides 0, as "
                 "np.broadcast_to or .expand make), which the library reads as a contiguous "
                 "tensor: %s",
                 v->name, txpy_shape_str(v, shape, sizeof shape), contiguous_hint);
    return -1;
  }
  *out = (txattn_layout){s[0], s[1], s[2]};
  return 0;
}

int txpy_rows_layout(const txpy_view *v, txattn_layout *out) {
  txpy_view as4 = *v; /* [batch][heads][rows] as [batch][heads][rows][1] */
  as4.ndim = 4;
  as4.shape[3] = 1;
  as4.strides[3] = 1;
  return txpy_view_layout(&as4, out);
}

/* The bytes [lo, hi) a non-empty view addresses */
static void extent(const txpy_view *v, uintptr_t *lo, uintptr_t *hi) {
  uint64_t last = 0;
  for (int i = 0; i < v->ndim; i++) last += (uint64_t)(v->shape[i] - 1) * (uint64_t)v->strides[i];
  *lo = (uintptr_t)v->data;
  *hi = *lo + (uintptr_t)(v->dtype == TXATTN_DTYPE_Q8_0 || v->dtype == TXATTN_DTYPE_Q4_0
                              ? (uint64_t)txattn_dtype_bytes(v->dtype, (int64_t)last + 1)
                              : (last + 1) * txpy_elem_size(v));
}

int txpy_view_kv8(txpy_view *v, txattn_dtype t) {
  if (v->dtype != TXPY_DTYPE_U8)
    return PyErr_Format(PyExc_ValueError,
                        "%s must be a uint8 array holding the %s cache (txattn.quantize makes "
                        "one), not %s",
                        v->name, txattn_dtype_name(t),
                        v->dtype == TXPY_DTYPE_BOOL ? "bool" : txattn_dtype_name(v->dtype)),
           -1;
  v->dtype = t;
  if (txattn_dtype_block(t) != 32 || v->ndim == 0) return 0;
  const int last = v->ndim - 1;
  const int64_t bb = (int64_t)txattn_dtype_size(t); /* bytes a block: 34 (q8_0), 18 (q4_0) */
  if (v->shape[last] % bb != 0)
    return PyErr_Format(PyExc_ValueError,
                        "%s's last dimension has %lld bytes, not whole %lld-byte %s blocks (32 "
                        "values each)",
                        v->name, (long long)v->shape[last], (long long)bb, txattn_dtype_name(t)),
           -1;
  v->shape[last] = v->shape[last] / bb * 32;
  for (int i = 0; i < last; i++) {
    if (v->strides[i] % bb != 0 && v->shape[i] > 1)
      return PyErr_Format(PyExc_ValueError,
                          "%s has a stride of %lld bytes in dimension %d, not whole %s blocks "
                          "of %lld bytes",
                          v->name, (long long)v->strides[i], i, txattn_dtype_name(t),
                          (long long)bb),
             -1;
    v->strides[i] = v->strides[i] / bb * 32;
  }
  return 0;
}

int txpy_views_overlap(const txpy_view *a, const txpy_view *b) {
  if (txpy_view_count(a) == 0 || txpy_view_count(b) == 0) return 0;
  uintptr_t a0, a1, b0, b1;
  extent(a, &a0, &a1);
  extent(b, &b0, &b1);
  return a0 < b1 && b0 < a1;
}
