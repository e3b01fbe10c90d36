/* SPDX-License-Identifier: MIT */
/* The kinds of tensors: NumPy arrays (and any other object with the buffer protocol or
 * __dlpack__, whose results are NumPy arrays) and torch tensors (whose results are torch tensors).
 * A torch tensor of a type txattn takes, on the CPU, is read through its own data_ptr(), shape and
 * stride(): the facts a DLPack export carries, without the managed tensor a DLPack export
 * allocates and frees, whose cost was most of a torch call's overhead (docs/python.md); any other
 * torch tensor goes through DLPack, whose import says what is wrong with it. Results are allocated
 * by numpy.empty or torch's cheapest allocation that fits (txpy_alloc). Neither NumPy nor torch is
 * imported here before the caller handed in one of its objects. */
#include <math.h>
#include <string.h>

#include "txpy.h"
#include "views.h"

static struct {
  PyObject *ndarray, *np_empty, *np_dtype[2]; /* f32, f16 */
  PyObject *torch, *tensor, *torch_empty, *torch_empty_like,
      *torch_dtype[4]; /* f32, f16, bf16, bool */
  PyObject *to_dlpack, *is_grad_enabled, *get_num_threads, *kw_dtype;
  PyObject *s_requires_grad, *s_dtype, *s_is_cpu, *s_shape, *s_stride, *s_data_ptr, *s_new_empty;
} K;

static int numpy_ready(void) {
  if (K.ndarray != NULL) return 0;
  PyObject *np = PyImport_ImportModule("numpy");
  if (np == NULL) {
    PyErr_SetString(PyExc_ImportError,
                    "NumPy is needed for NumPy results (inputs other than torch tensors)");
    return -1;
  }
  PyObject *dtype = PyObject_GetAttrString(np, "dtype");
  K.np_empty = PyObject_GetAttrString(np, "empty");
  K.np_dtype[0] = dtype ? PyObject_CallFunction(dtype, "s", "float32") : NULL;
  K.np_dtype[1] = dtype ? PyObject_CallFunction(dtype, "s", "float16") : NULL;
  PyObject *ndarray = PyObject_GetAttrString(np, "ndarray");
  Py_XDECREF(dtype);
  Py_DECREF(np);
  if (ndarray == NULL || K.np_empty == NULL || K.np_dtype[0] == NULL || K.np_dtype[1] == NULL) {
    Py_XDECREF(ndarray);
    return -1;
  }
  K.ndarray = ndarray; /* last: it marks the rest as ready */
  return 0;
}

/* torch's objects once torch is imported (by the caller: never here); 1 if ready, 0 if torch is
   not imported, -1 on error. */
static int torch_ready(void) {
  if (K.tensor != NULL) return 1;
  PyObject *torch = PyImport_GetModule(K.torch);
  if (torch == NULL) return PyErr_Occurred() ? -1 : 0;
  static const char *const dtypes[4] = {"float32", "float16", "bfloat16", "bool"};
  for (int i = 0; i < 4; i++)
    if ((K.torch_dtype[i] = PyObject_GetAttrString(torch, dtypes[i])) == NULL) goto fail;
  PyObject *dlpack = PyImport_ImportModule("torch.utils.dlpack");
  K.to_dlpack = dlpack ? PyObject_GetAttrString(dlpack, "to_dlpack") : NULL;
  Py_XDECREF(dlpack);
  K.torch_empty = PyObject_GetAttrString(torch, "empty");
  K.torch_empty_like = PyObject_GetAttrString(torch, "empty_like");
  K.is_grad_enabled = PyObject_GetAttrString(torch, "is_grad_enabled");
  K.get_num_threads = PyObject_GetAttrString(torch, "get_num_threads");
  K.kw_dtype = Py_BuildValue("(s)", "dtype");
  PyObject *tensor = PyObject_GetAttrString(torch, "Tensor");
  if (tensor == NULL || K.to_dlpack == NULL || K.torch_empty == NULL ||
      K.torch_empty_like == NULL || K.is_grad_enabled == NULL || K.get_num_threads == NULL ||
      K.kw_dtype == NULL || !PyType_Check(tensor)) {
    Py_XDECREF(tensor);
    goto fail;
  }
  Py_DECREF(torch);
  K.tensor = tensor; /* last: it marks the rest as ready */
  return 1;
fail:
  Py_DECREF(torch);
  return -1;
}

int txpy_kinds_init(void) {
  struct {
    PyObject **s;
    const char *text;
  } names[] = {{&K.torch, "torch"},         {&K.s_requires_grad, "requires_grad"},
               {&K.s_dtype, "dtype"},       {&K.s_is_cpu, "is_cpu"},
               {&K.s_shape, "shape"},       {&K.s_stride, "stride"},
               {&K.s_data_ptr, "data_ptr"}, {&K.s_new_empty, "new_empty"}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if ((*names[i].s = PyUnicode_InternFromString(names[i].text)) == NULL) return -1;
  return 0;
}

int txpy_is_torch(PyObject *x) {
  if (K.tensor == NULL) {
    if (K.ndarray == NULL && strcmp(Py_TYPE(x)->tp_name, "numpy.ndarray") == 0 && numpy_ready())
      return -1;
    if (K.ndarray != NULL && Py_IS_TYPE(x, (PyTypeObject *)K.ndarray)) return 0;
    int ready = torch_ready();
    if (ready <= 0) return ready; /* torch not imported: x is no torch tensor */
  }
  return PyObject_TypeCheck(x, (PyTypeObject *)K.tensor);
}

int txpy_torch_threads(void) {
  if (K.get_num_threads == NULL && torch_ready() <= 0) return -1;
  PyObject *n = PyObject_CallNoArgs(K.get_num_threads);
  long threads = n ? PyLong_AsLong(n) : -1;
  Py_XDECREF(n);
  if (threads < 0) PyErr_Clear(); /* a torch without the call: the library's default */
  return threads < 0 ? -1 : (int)threads;
}

/* The checks a torch tensor needs beyond DLPack's: no gradient to lose. */
static int torch_check(PyObject *t, const char *name) {
  PyObject *rg = PyObject_GetAttr(t, K.s_requires_grad);
  if (rg == NULL) return -1;
  int requires = PyObject_IsTrue(rg);
  Py_DECREF(rg);
  if (requires <= 0) return requires;
  PyObject *on = PyObject_CallNoArgs(K.is_grad_enabled);
  int enabled = on ? PyObject_IsTrue(on) : -1;
  Py_XDECREF(on);
  if (enabled > 0)
    PyErr_Format(PyExc_ValueError,
                 "%s requires grad, and txattn computes no gradients: call it under "
                 "torch.no_grad() or torch.inference_mode(), or pass %s.detach()",
                 name, name);
  return enabled != 0 ? -1 : 0;
}

/* The sizes of a torch.Size or strides tuple into out; -1 on error */
static int int64s(PyObject *tuple, const char *name, const char *what, int64_t *out, int *n) {
  if (tuple == NULL) return -1;
  if (!PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) > TXPY_MAX_DIMS) {
    PyErr_Format(PyExc_ValueError, "%s has %zd dimensions; at most %d are taken", name,
                 PyTuple_Check(tuple) ? PyTuple_GET_SIZE(tuple) : -1, TXPY_MAX_DIMS);
    return -1;
  }
  *n = (int)PyTuple_GET_SIZE(tuple);
  for (int i = 0; i < *n; i++) {
    out[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(tuple, i));
    if (out[i] == -1 && PyErr_Occurred()) return -1;
    if (out[i] < 0) {
      PyErr_Format(PyExc_ValueError, "%s has a negative %s in dimension %d", name, what, i);
      return -1;
    }
  }
  return 0;
}

/* A torch tensor through its attributes: 0, -1 on error, 1 when it is not a CPU tensor of a type
   txattn takes (DLPack then says so). */
static int from_torch(PyObject *t, const char *name, int flags, txpy_view *v) {
  PyObject *dtype = PyObject_GetAttr(t, K.s_dtype);
  if (dtype == NULL) return -1;
  int d = -1;
  for (int i = 0; i < 3; i++)
    if (dtype == K.torch_dtype[i]) d = i;
  if (dtype == K.torch_dtype[3]) d = (int)TXPY_DTYPE_BOOL; /* masks: DLPack (torch 1.13) has none */
  Py_DECREF(dtype);
  PyObject *cpu = d >= 0 ? PyObject_GetAttr(t, K.s_is_cpu) : NULL;
  int on_cpu = cpu != NULL ? PyObject_IsTrue(cpu) : 0;
  Py_XDECREF(cpu);
  if (on_cpu < 0 || (d >= 0 && cpu == NULL)) return -1;
  if (d < 0 || !on_cpu) return 1;
  memset(v, 0, sizeof *v);
  v->name = name;
  v->dtype = (txattn_dtype)d;
  PyObject *shape = PyObject_GetAttr(t, K.s_shape);
  int ndim = 0, nstrides = 0, rc = int64s(shape, name, "size", v->shape, &ndim);
  Py_XDECREF(shape);
  if (rc) return -1;
  PyObject *strides = PyObject_CallMethodNoArgs(t, K.s_stride);
  PyObject *ptr = strides ? PyObject_CallMethodNoArgs(t, K.s_data_ptr) : NULL;
  if (ptr == NULL) { /* a sparse or other layout without strides or storage: DLPack says why */
    Py_XDECREF(strides);
    PyErr_Clear();
    return 1;
  }
  rc = int64s(strides, name, "stride", v->strides, &nstrides);
  v->data = PyLong_AsVoidPtr(ptr);
  Py_DECREF(strides);
  Py_DECREF(ptr);
  if (rc || PyErr_Occurred()) return -1;
  if (nstrides != ndim) return 1;
  v->ndim = ndim;
  return txpy_view_check(v, name, flags);
}

int txpy_import(PyObject *obj, const char *name, int flags, txpy_view *v, int *torch) {
  int is_torch = txpy_is_torch(obj);
  if (is_torch < 0) return -1;
  if (torch != NULL) *torch = is_torch;
  if (!is_torch) return txpy_view_import(obj, name, flags, v);
  if (torch_check(obj, name)) return -1;
  int rc = from_torch(obj, name, flags, v);
  if (rc <= 0) return rc;
  PyObject *capsule = PyObject_CallOneArg(K.to_dlpack, obj);
  if (capsule == NULL) { /* torch refuses some tensors itself (meta, sparse): say what to do */
    PyObject *type, *value, *trace;
    PyErr_Fetch(&type, &value, &trace);
    PyErr_NormalizeException(&type, &value, &trace);
    PyObject *device = PyObject_GetAttrString(obj, "device");
    PyObject *kind = device ? PyObject_GetAttrString(device, "type") : NULL;
    if (kind != NULL && PyUnicode_Check(kind) && PyUnicode_CompareWithASCIIString(kind, "cpu"))
      PyErr_Format(PyExc_ValueError, "%s is on %S: txattn runs on the CPU; move it with .cpu()",
                   name, device);
    else if (kind != NULL)
      PyErr_Format(PyExc_ValueError,
                   "%s cannot be read as a strided tensor (torch: %S): pass a dense one, "
                   "e.g. %s.to_dense()",
                   name, value ? value : Py_None, name);
    Py_XDECREF(type), Py_XDECREF(value), Py_XDECREF(trace);
    Py_XDECREF(kind);
    Py_XDECREF(device);
    return -1;
  }
  rc = txpy_view_import(capsule, name, flags, v);
  Py_DECREF(capsule);
  return rc;
}

int txpy_import_new(PyObject *obj, int torch, const char *name, int ndim, const int64_t *shape,
                    txattn_dtype dtype, txpy_view *v) {
  if (!torch) return txpy_view_import(obj, name, TXPY_WRITE | TXPY_ROWS, v);
  memset(v, 0, sizeof *v); /* what we asked torch for: only where it lies is new */
  v->name = name;
  v->dtype = dtype;
  v->ndim = ndim;
  int64_t compact = 1;
  for (int i = ndim - 1; i >= 0; i--) {
    v->shape[i] = shape[i];
    v->strides[i] = compact;
    compact *= shape[i];
  }
  PyObject *ptr = PyObject_CallMethodNoArgs(obj, K.s_data_ptr);
  v->data = ptr != NULL ? PyLong_AsVoidPtr(ptr) : NULL;
  Py_XDECREF(ptr);
  return PyErr_Occurred() ? -1 : txpy_view_check(v, name, TXPY_ROWS);
}

PyObject *txpy_alloc(int torch, PyObject *like, int like_same, int ndim, const int64_t *shape,
                     txattn_dtype dtype) {
  if (torch && like_same && torch_ready() > 0) /* the cheapest of torch's allocations */
    return PyObject_CallOneArg(K.torch_empty_like, like);
  PyObject *dims = PyTuple_New(ndim);
  for (int i = 0; dims != NULL && i < ndim; i++) {
    PyObject *n = PyLong_FromLongLong(shape[i]);
    if (n == NULL)
      Py_CLEAR(dims);
    else
      PyTuple_SET_ITEM(dims, i, n);
  }
  if (dims == NULL) return NULL;
  PyObject *result = NULL;
  if (torch) {
    PyObject *like_dtype = like ? PyObject_GetAttr(like, K.s_dtype) : NULL;
    if (like_dtype == NULL) PyErr_Clear();
    if (torch_ready() > 0 && like_dtype != NULL && like_dtype == K.torch_dtype[dtype]) {
      PyObject *args[2] = {like, dims}; /* new_empty: like's type and device, and the fastest */
      result =
          PyObject_VectorcallMethod(K.s_new_empty, args, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    } else if (torch_ready() > 0) {
      PyObject *args[2] = {dims, K.torch_dtype[dtype]};
      result = PyObject_Vectorcall(K.torch_empty, args, 1, K.kw_dtype);
    }
    Py_XDECREF(like_dtype);
  } else if (dtype == TXATTN_DTYPE_BF16) {
    PyErr_SetString(PyExc_ValueError,
                    "NumPy has no bfloat16: a bfloat16 result needs torch tensors as inputs");
  } else if (numpy_ready() == 0) {
    result = PyObject_CallFunctionObjArgs(K.np_empty, dims, K.np_dtype[dtype], NULL);
  }
  Py_DECREF(dims);
  return result;
}

void txpy_fill(const txpy_view *v, int minus_inf) {
  int64_t n = txpy_view_count(v);
  if (!minus_inf) {
    memset(v->data, 0, (size_t)n * txattn_dtype_size(v->dtype));
    return;
  }
  float *f = (float *)v->data; /* lse: float32 */
  for (int64_t i = 0; i < n; i++) f[i] = -INFINITY;
}
