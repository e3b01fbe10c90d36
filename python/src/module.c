/* SPDX-License-Identifier: MIT */
/* txattn._txattn: the library's errors as exceptions, its context and plan as Python types, and
 * the module that holds them with the calls of calls.c. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <txattn/plugin.h>

#include "txpy.h"

/* ---- errors ---------------------------------------------------------------------------------- */

/* Per status: the exception's name and doc (txpy_errors_init adds a built-in base to some). */
static const struct {
  txattn_status status;
  const char *name;
  const char *doc;
} error_classes[] = {
    {TXATTN_E_INVALID, "InvalidError",
     "TXATTN_E_INVALID: the library found an argument malformed (also a ValueError)."},
    {TXATTN_E_UNSUPPORTED, "UnsupportedError",
     "TXATTN_E_UNSUPPORTED: the kernel cannot run here or cannot do this problem."},
    {TXATTN_E_NOT_FOUND, "NotFoundError",
     "TXATTN_E_NOT_FOUND: no such kernel (also a LookupError)."},
    {TXATTN_E_NOMEM, "OutOfMemoryError", "TXATTN_E_NOMEM: out of memory (also a MemoryError)."},
    {TXATTN_E_PLUGIN, "PluginError", "TXATTN_E_PLUGIN: a plugin failed."},
    {TXATTN_E_TABLE, "TableError", "TXATTN_E_TABLE: the dispatch table is malformed or stale."},
    {TXATTN_E_IO, "FileError", "TXATTN_E_IO: a file could not be read or written."},
    {TXATTN_E_INTERNAL, "InternalError",
     "TXATTN_E_INTERNAL: a bug in txattn; please report it with the message."},
};
#define N_ERROR_CLASSES (sizeof error_classes / sizeof error_classes[0])
static PyObject *error_base, *error_types[N_ERROR_CLASSES];

int txpy_errors_init(PyObject *m) {
  error_base = PyErr_NewExceptionWithDoc(
      "txattn.Error",
      "A status other than TXATTN_OK from libtxattn. Attributes: status (the status name, "
      "\"TXATTN_E_INVALID\"), code (its number) and message (txattn_last_error()'s text, which "
      "says what to fix).",
      NULL, NULL);
  if (error_base == NULL || PyModule_AddObjectRef(m, "Error", error_base) < 0) return -1;
  for (size_t i = 0; i < N_ERROR_CLASSES; i++) {
    PyObject *extra = error_classes[i].status == TXATTN_E_INVALID     ? PyExc_ValueError
                      : error_classes[i].status == TXATTN_E_NOT_FOUND ? PyExc_LookupError
                      : error_classes[i].status == TXATTN_E_NOMEM     ? PyExc_MemoryError
                                                                      : NULL;
    PyObject *bases = extra ? PyTuple_Pack(2, error_base, extra) : PyTuple_Pack(1, error_base);
    if (bases == NULL) return -1;
    char qualified[64];
    snprintf(qualified, sizeof qualified, "txattn.%s", error_classes[i].name);
    error_types[i] = PyErr_NewExceptionWithDoc(qualified, error_classes[i].doc, bases, NULL);
    Py_DECREF(bases);
    if (error_types[i] == NULL ||
        PyModule_AddObjectRef(m, error_classes[i].name, error_types[i]) < 0)
      return -1;
  }
  return 0;
}

static int set_attr(PyObject *obj, const char *name, PyObject *value) {
  int rc = value != NULL ? PyObject_SetAttrString(obj, name, value) : -1;
  Py_XDECREF(value);
  return rc;
}

PyObject *txpy_raise_status(txattn_status status, const char *message) {
  PyObject *type = error_base;
  for (size_t i = 0; i < N_ERROR_CLASSES; i++)
    if (error_classes[i].status == status) type = error_types[i];
  const char *name = txattn_status_name(status);
  PyObject *text = PyUnicode_FromFormat("%s: %s", name, message);
  PyObject *exc = text != NULL ? PyObject_CallOneArg(type, text) : NULL;
  Py_XDECREF(text);
  if (exc == NULL) return NULL;
  if (set_attr(exc, "status", PyUnicode_FromString(name)) == 0 &&
      set_attr(exc, "code", PyLong_FromLong((long)status)) == 0 &&
      set_attr(exc, "message", PyUnicode_FromString(message)) == 0)
    PyErr_SetObject(type, exc);
  Py_DECREF(exc);
  return NULL;
}

/* ---- Context --------------------------------------------------------------------------------- */

/* A path argument: None (NULL), str or os.PathLike, as UTF-8 held by *keep */
static int path_arg(PyObject *obj, const char **out, PyObject **keep) {
  *out = NULL;
  *keep = NULL;
  if (obj == NULL || obj == Py_None) return 0;
  if ((*keep = PyOS_FSPath(obj)) == NULL) return -1;
  if (!PyUnicode_Check(*keep)) {
    PyErr_SetString(PyExc_TypeError, "paths must be str (or os.PathLike of str)");
    return -1;
  }
  return (*out = PyUnicode_AsUTF8(*keep)) != NULL ? 0 : -1;
}

static PyObject *context_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"plugin_path", "table", "threads", "caches", NULL};
  PyObject *plugin_obj = NULL, *table_obj = NULL, *threads_obj = NULL, *keep[2] = {NULL, NULL};
  const char *plugin_path = NULL, *table = NULL, *caches = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OOOz:Context", kw, &plugin_obj, &table_obj,
                                   &threads_obj, &caches))
    return NULL;
  long threads = 0;
  if (threads_obj != NULL && threads_obj != Py_None) {
    if (PyBool_Check(threads_obj) || !PyLong_Check(threads_obj)) {
      PyErr_Format(PyExc_TypeError, "threads must be an int; got %R", threads_obj);
      return NULL;
    }
    threads = PyLong_AsLong(threads_obj);
    if (threads == -1 && PyErr_Occurred()) return NULL;
  }
  if (threads < 0 || threads > 65536) {
    PyErr_Format(PyExc_ValueError,
                 "threads = %ld: give a count >= 1, or 0 for every CPU this process may run on",
                 threads);
    return NULL;
  }
  PyObject *self = NULL;
  if (path_arg(plugin_obj, &plugin_path, &keep[0]) || path_arg(table_obj, &table, &keep[1]))
    goto done;
  txattn_options o = TXATTN_OPTIONS_INIT;
  o.plugin_path = plugin_path;
  o.table_path = table;
  o.n_threads = (int)threads;
  o.caches = caches;
  txattn_context *ctx = NULL;
  PyThreadState *unlocked = PyEval_SaveThread();
  txattn_status s = txattn_context_create(&o, &ctx);
  PyEval_RestoreThread(unlocked);
  if (s != TXATTN_OK) {
    txpy_raise_status(s, txattn_last_error());
    goto done;
  }
  if ((self = type->tp_alloc(type, 0)) == NULL) {
    txattn_context_free(ctx);
    goto done;
  }
  ((txpy_context *)self)->ctx = ctx;
done:
  Py_XDECREF(keep[0]);
  Py_XDECREF(keep[1]);
  return self;
}

static void context_dealloc(txpy_context *self) {
  txattn_context_free(self->ctx);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *str_or_none(const char *s) {
  return s != NULL ? PyUnicode_FromString(s) : Py_NewRef(Py_None);
}

static PyObject *dtype_list(unsigned set) {
  PyObject *l = PyList_New(0);
  for (int t = TXATTN_DTYPE_F32; l != NULL && txattn_dtype_size((txattn_dtype)t) != 0; t++) {
    if (!(set & TXATTN_DTYPE_BIT(t))) continue;
    PyObject *name = PyUnicode_FromString(txattn_dtype_name((txattn_dtype)t));
    if (name == NULL || PyList_Append(l, name) < 0) Py_CLEAR(l);
    Py_XDECREF(name);
  }
  return l;
}

static PyObject *flag_list(unsigned flags) {
  PyObject *l = PyList_New(0);
  for (unsigned bit = 0; l != NULL && bit < 32; bit++) {
    const char *flag = txattn_kernel_flag_name(flags & (1u << bit));
    if (flag == NULL) continue;
    PyObject *name = PyUnicode_FromString(flag);
    if (name == NULL || PyList_Append(l, name) < 0) Py_CLEAR(l);
    Py_XDECREF(name);
  }
  return l;
}

static PyObject *kernel_tunables(const txattn_context *ctx, size_t k) {
  size_t n = txattn_kernel_tunable_count(ctx, k);
  PyObject *l = PyList_New(0);
  for (size_t i = 0; l != NULL && i < n; i++) {
    txattn_tunable_info t = TXATTN_TUNABLE_INFO_INIT;
    if (txattn_kernel_tunable_get(ctx, k, i, &t) != TXATTN_OK) continue;
    PyObject *d = Py_BuildValue("{s:s,s:s,s:L,s:L,s:L}", "name", t.name, "summary",
                                t.summary ? t.summary : "", "min", (long long)t.min, "max",
                                (long long)t.max, "multiple_of", (long long)t.multiple_of);
    if (d == NULL || PyList_Append(l, d) < 0) Py_CLEAR(l);
    Py_XDECREF(d);
  }
  return l;
}

static PyObject *context_kernels(txpy_context *self, PyObject *unused) {
  (void)unused;
  size_t n = txattn_kernel_count(self->ctx);
  PyObject *list = PyList_New(0);
  for (size_t i = 0; list != NULL && i < n; i++) {
    txattn_kernel_info k = TXATTN_KERNEL_INFO_INIT;
    txattn_status s = txattn_kernel_get(self->ctx, i, &k);
    if (s != TXATTN_OK) {
      Py_DECREF(list);
      return txpy_raise_status(s, txattn_last_error());
    }
    PyObject *d = Py_BuildValue(
        "{s:s,s:N,s:N,s:N,s:O,s:N,s:N,s:N,s:N,s:N,s:N,s:{s:N,s:N,s:N,s:N},s:N}", "name", k.name,
        "summary", str_or_none(k.summary), "plugin", str_or_none(k.plugin), "path",
        str_or_none(k.path), "usable", k.usable ? Py_True : Py_False, "why_unusable",
        str_or_none(k.usable ? NULL : k.why_unusable), "isa", str_or_none(k.isa), "flags",
        flag_list(k.flags), "plugin_version", str_or_none(k.plugin_version), "plugin_build",
        str_or_none(k.plugin_build), "one_thread_same_as", str_or_none(k.one_thread_same_as),
        "dtypes", "q", dtype_list(k.dtypes[0]), "k", dtype_list(k.dtypes[1]), "v",
        dtype_list(k.dtypes[2]), "o", dtype_list(k.dtypes[3]), "tunables",
        kernel_tunables(self->ctx, i));
    if (d == NULL || PyList_Append(list, d) < 0) Py_CLEAR(list);
    Py_XDECREF(d);
  }
  return list;
}

static PyObject *context_rejected(txpy_context *self, PyObject *unused) {
  (void)unused;
  size_t n = txattn_rejected_count(self->ctx);
  PyObject *list = PyList_New(0);
  for (size_t i = 0; list != NULL && i < n; i++) {
    txattn_rejected_info r = TXATTN_REJECTED_INFO_INIT;
    if (txattn_rejected_get(self->ctx, i, &r) != TXATTN_OK) continue;
    PyObject *d =
        Py_BuildValue("{s:N,s:N}", "path", str_or_none(r.path), "reason", str_or_none(r.reason));
    if (d == NULL || PyList_Append(list, d) < 0) Py_CLEAR(list);
    Py_XDECREF(d);
  }
  return list;
}

static PyObject *context_machine(txpy_context *self, PyObject *unused) {
  (void)unused;
  txattn_machine_info m = TXATTN_MACHINE_INFO_INIT;
  txattn_status s = txattn_context_machine(self->ctx, &m);
  if (s != TXATTN_OK) return txpy_raise_status(s, txattn_last_error());
  PyObject *isas = PyList_New(0);
  for (int i = 0; isas != NULL && i < TXATTN_ISA_COUNT_; i++) {
    if (!(m.isa_mask & (1u << i))) continue;
    PyObject *name = PyUnicode_FromString(txattn_isa_name((txattn_isa)i));
    if (name == NULL || PyList_Append(isas, name) < 0) Py_CLEAR(isas);
    Py_XDECREF(name);
  }
  return Py_BuildValue("{s:s,s:s,s:N,s:i,s:i,s:i,s:L,s:L,s:L,s:s,s:s}", "vendor", m.vendor, "brand",
                       m.brand, "isas", isas, "cores", m.n_cores, "pus", m.n_pus, "numa_nodes",
                       m.n_numa, "l1d_bytes", (long long)m.l1d_bytes, "l2_bytes",
                       (long long)m.l2_bytes, "l3_bytes", (long long)m.l3_bytes, "cache_source",
                       m.cache_source, "cache_notes", m.cache_notes);
}

static PyObject *context_threads(txpy_context *self, void *unused) {
  (void)unused;
  return PyLong_FromLong(txattn_context_threads(self->ctx));
}

static PyObject *context_table_status(txpy_context *self, void *unused) {
  (void)unused;
  static const char *const names[] = {"loaded", "none", "stale", "malformed"};
  txattn_table_status s = txattn_context_table_status(self->ctx);
  return PyUnicode_FromString((unsigned)s < 4 ? names[s] : "unknown");
}

static PyObject *context_table_state(txpy_context *self, void *unused) {
  (void)unused;
  return str_or_none(txattn_context_table_state(self->ctx));
}

static PyObject *context_table_path(txpy_context *self, void *unused) {
  (void)unused;
  return str_or_none(txattn_context_table_path(self->ctx));
}

static PyMethodDef context_methods[] = {
    {"kernels", (PyCFunction)context_kernels, METH_NOARGS, "The kernels found, as dicts."},
    {"rejected", (PyCFunction)context_rejected, METH_NOARGS, "Plugin files refused, and why."},
    {"machine", (PyCFunction)context_machine, METH_NOARGS, "The machine as the library sees it."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef context_getset[] = {
    {"threads", (getter)context_threads, NULL, "The resolved thread count.", NULL},
    {"table_status", (getter)context_table_status, NULL,
     "\"loaded\", \"none\", \"stale\" or \"malformed\".", NULL},
    {"table_state", (getter)context_table_state, NULL, "The dispatch table's state in words.",
     NULL},
    {"table_path", (getter)context_table_path, NULL, "The table file looked for (\"\": none).",
     NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject txpy_context_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "txattn._txattn.Context",
    .tp_basicsize = sizeof(txpy_context),
    .tp_dealloc = (destructor)context_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Context(plugin_path=None, table=None, threads=0, caches=None)\n--\n\n"
              "A txattn_context: the plugins loaded once (txattn.Context derives from it).",
    .tp_methods = context_methods,
    .tp_getset = context_getset,
    .tp_new = context_new,
};

/* ---- Plan ------------------------------------------------------------------------------------ */

static void plan_dealloc(txpy_plan *self) {
  txattn_plan_free(self->plan);
  Py_XDECREF(self->context);
  Py_XDECREF(self->q_lens);
  Py_XDECREF(self->kv_lens);
  Py_XDECREF(self->attn_mask);
  Py_XDECREF(self->block_table);
  Py_XDECREF(self->q_offsets);
  Py_XDECREF(self->k_scale);
  Py_XDECREF(self->v_scale);
  free(self->alibi_slopes);
  free(self->sinks);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *plan_repr(txpy_plan *self) {
  char small[512];
  txattn_plan_describe(self->plan, small, sizeof small);
  return PyUnicode_FromFormat("txattn.Plan(\"%s\")", small);
}

static PyObject *plan_kernel(txpy_plan *self, void *unused) {
  (void)unused;
  return str_or_none(txattn_plan_kernel(self->plan));
}

static PyObject *plan_why(txpy_plan *self, void *unused) {
  (void)unused;
  return str_or_none(txattn_plan_why(self->plan));
}

/* [(kernel, status name), ...]: the kernels the dispatcher tried before the plan's that could not
   plan it (txattn_plan_failed_get). */
static PyObject *plan_failed(txpy_plan *self, void *unused) {
  (void)unused;
  size_t n = txattn_plan_failed_count(self->plan);
  PyObject *list = PyList_New(0);
  for (size_t i = 0; list != NULL && i < n; i++) {
    const char *kernel;
    txattn_status st;
    if (txattn_plan_failed_get(self->plan, i, &kernel, &st) != TXATTN_OK) continue;
    PyObject *item = Py_BuildValue("(ss)", kernel, txattn_status_name(st));
    if (item == NULL || PyList_Append(list, item) != 0) {
      Py_XDECREF(item);
      Py_DECREF(list);
      return NULL;
    }
    Py_DECREF(item);
  }
  return list;
}

static PyObject *plan_describe(txpy_plan *self, void *unused) {
  (void)unused;
  char small[512];
  int n = txattn_plan_describe(self->plan, small, sizeof small);
  if (n < 0) return PyUnicode_FromString("");
  if ((size_t)n < sizeof small) return PyUnicode_FromString(small);
  char *big = PyMem_Malloc((size_t)n + 1);
  if (big == NULL) return PyErr_NoMemory();
  txattn_plan_describe(self->plan, big, (size_t)n + 1);
  PyObject *s = PyUnicode_FromString(big);
  PyMem_Free(big);
  return s;
}

static PyObject *plan_tunables(txpy_plan *self, void *unused) {
  (void)unused;
  PyObject *d = PyDict_New();
  size_t n = txattn_plan_tunable_count(self->plan);
  for (size_t i = 0; d != NULL && i < n; i++) {
    const char *name;
    int64_t value;
    if (txattn_plan_tunable_get(self->plan, i, &name, &value) != TXATTN_OK) continue;
    PyObject *v = PyLong_FromLongLong(value);
    if (v == NULL || PyDict_SetItemString(d, name, v) < 0) Py_CLEAR(d);
    Py_XDECREF(v);
  }
  return d;
}

static PyObject *plan_problem(txpy_plan *self, void *unused) {
  (void)unused;
  return txpy_problem_dict(&self->problem);
}

static PyObject *plan_context(txpy_plan *self, void *unused) {
  (void)unused;
  return Py_NewRef(self->context);
}

static PyGetSetDef plan_getset[] = {
    {"kernel", (getter)plan_kernel, NULL, "The kernel the plan runs.", NULL},
    {"why", (getter)plan_why, NULL, "Why the dispatcher chose it.", NULL},
    {"failed", (getter)plan_failed, NULL,
     "The kernels tried before it that could not plan: [(kernel, status name), ...].", NULL},
    {"description", (getter)plan_describe, NULL, "The plan in one line.", NULL},
    {"tunables", (getter)plan_tunables, NULL, "Its tunables: name -> value.", NULL},
    {"problem", (getter)plan_problem, NULL, "The problem it was made for.", NULL},
    {"context", (getter)plan_context, NULL, "The context it was made in.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject txpy_plan_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "txattn.Plan",
    .tp_basicsize = sizeof(txpy_plan),
    .tp_dealloc = (destructor)plan_dealloc,
    .tp_vectorcall_offset = offsetof(txpy_plan, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_repr = (reprfunc)plan_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = txpy_plan_call_doc,
    .tp_getset = plan_getset,
};

/* ---- module ---------------------------------------------------------------------------------- */

static PyObject *version(PyObject *self, PyObject *unused) {
  (void)self, (void)unused;
  return Py_BuildValue("(is)", txattn_version(), txattn_version_string());
}

/* The catalogue of real models (txattn_model_*): a dict per model, its layer kinds as dicts. */
static PyObject *model_kind(int64_t i, int64_t j) {
  txattn_model_layer_info k = TXATTN_MODEL_LAYER_INFO_INIT;
  txattn_status s = txattn_model_layer(i, j, &k);
  if (s != TXATTN_OK) return txpy_raise_status(s, txattn_last_error());
  PyObject *window = k.mask == TXATTN_MASK_WINDOW ? Py_BuildValue("(LL)", (long long)k.window_left,
                                                                  (long long)k.window_right)
                                                  : Py_NewRef(Py_None);
  PyObject *softcap = k.softcap > 0.0f ? PyFloat_FromDouble(k.softcap) : Py_NewRef(Py_None);
  PyObject *max_bias = k.alibi ? PyFloat_FromDouble(k.alibi_max_bias) : Py_NewRef(Py_None);
  PyObject *n_q = k.n_q > 0 ? PyLong_FromLongLong(k.n_q) : Py_NewRef(Py_None);
  PyObject *n_kv = k.n_kv > 0 ? PyLong_FromLongLong(k.n_kv) : Py_NewRef(Py_None);
  if (!window || !softcap || !max_bias || !n_q || !n_kv) {
    Py_XDECREF(window), Py_XDECREF(softcap), Py_XDECREF(max_bias), Py_XDECREF(n_q);
    Py_XDECREF(n_kv);
    return NULL;
  }
  return Py_BuildValue(
      "{s:s,s:L,s:L,s:L,s:L,s:L,s:s,s:N,s:d,s:N,s:O,s:N,s:O,s:L,s:N,s:N,s:O,s:O,"
      "s:O}",
      "kind", k.kind, "layers", (long long)k.layers, "heads_q", (long long)k.heads_q, "heads_kv",
      (long long)k.heads_kv, "d_qk", (long long)k.d_qk, "d_v", (long long)k.d_v, "mask",
      txattn_mask_name(k.mask), "window", window, "scale", (double)k.scale, "softcap", softcap,
      "alibi", k.alibi ? Py_True : Py_False, "alibi_max_bias", max_bias, "sinks",
      k.sinks ? Py_True : Py_False, "sink_keys", (long long)k.sink_keys, "n_q", n_q, "n_kv", n_kv,
      "decode", k.decode ? Py_True : Py_False, "ragged", k.ragged ? Py_True : Py_False,
      "relative_bias", k.relative_bias ? Py_True : Py_False);
}

static PyObject *models(PyObject *self, PyObject *unused) {
  (void)self, (void)unused;
  PyObject *list = PyList_New(0);
  for (int64_t i = 0; list != NULL && i < txattn_model_count(); i++) {
    txattn_model_info m = TXATTN_MODEL_INFO_INIT;
    txattn_status s = txattn_model_get(i, &m);
    if (s != TXATTN_OK) {
      Py_DECREF(list);
      return txpy_raise_status(s, txattn_last_error());
    }
    PyObject *kinds = PyList_New(0);
    for (int64_t j = 0; kinds != NULL && j < m.n_kinds; j++) {
      PyObject *k = model_kind(i, j);
      if (k == NULL || PyList_Append(kinds, k) < 0) Py_CLEAR(kinds);
      Py_XDECREF(k);
    }
    PyObject *d = kinds ? Py_BuildValue("{s:s,s:s,s:s,s:s,s:L,s:N}", "name", m.name, "title",
                                        m.title, "source", m.source, "note", m.note, "layers",
                                        (long long)m.layers, "kinds", kinds)
                        : NULL;
    if (d == NULL || PyList_Append(list, d) < 0) Py_CLEAR(list);
    Py_XDECREF(d);
  }
  return list;
}

#define FASTCALL_KW(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL | METH_KEYWORDS

static PyMethodDef module_methods[] = {
    {"attention", FASTCALL_KW(txpy_attention), txpy_attention_doc},
    {"reference", FASTCALL_KW(txpy_reference), txpy_reference_doc},
    {"error_bound", FASTCALL_KW(txpy_error_bound), txpy_error_bound_doc},
    {"default_context", txpy_default_context, METH_NOARGS,
     "default_context($module, /)\n--\n\n"
     "The context of calls without context=: the one set_default_context() gave, else one per\n"
     "thread count, made on first use: torch.get_num_threads() threads when torch is imported\n"
     "(txattn's threads then match torch's intra-op pool, and the two never run at once), else\n"
     "0, every CPU this process may run on."},
    {"set_default_context", txpy_set_default_context, METH_O,
     "set_default_context($module, context, /)\n--\n\n"
     "Makes context the one calls without context= run in (None: back to the automatic one)."},
    {"_register", txpy_register, METH_O, "The Context class default contexts are made of."},
    {"_run", (PyCFunction)(void (*)(void))txpy_run, METH_FASTCALL,
     "Plans and scaled_dot_product_attention's call (private)."},
    {"_merge", (PyCFunction)(void (*)(void))txpy_merge, METH_FASTCALL,
     "txattn_merge (private: use txattn.merge)."},
    {"_spec", (PyCFunction)(void (*)(void))txpy_spec, METH_FASTCALL,
     "(shape, dtype name) of a tensor (private: plans)."},
    {"_alibi_slopes", (PyCFunction)(void (*)(void))txpy_alibi_slopes, METH_FASTCALL,
     "txattn_alibi_slopes (private: use txattn.alibi_slopes)."},
    {"_convert", (PyCFunction)(void (*)(void))txpy_convert, METH_FASTCALL,
     "txattn_convert (private: use txattn.quantize and txattn.dequantize)."},
    {"_convert_scale", (PyCFunction)(void (*)(void))txpy_convert_scale, METH_FASTCALL,
     "txattn_convert_scale (private: use txattn.fp8_scale)."},
    {"version", version, METH_NOARGS, "(txattn_version(), txattn_version_string()) at run time."},
    {"models", models, METH_NOARGS, "The catalogue of real models (private: use txattn.models)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "txattn._txattn",
    .m_doc = "The C half of txattn: libtxattn's public API, with every argument checked.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__txattn(void);
PyMODINIT_FUNC PyInit__txattn(void) {
  if (PyType_Ready(&txpy_context_type) < 0 || PyType_Ready(&txpy_plan_type) < 0 ||
      txpy_kinds_init() < 0 || txpy_api_init() < 0)
    return NULL;
  PyObject *m = PyModule_Create(&module_def);
  if (m == NULL) return NULL;
  if (PyModule_AddObjectRef(m, "Context", (PyObject *)&txpy_context_type) < 0 ||
      PyModule_AddObjectRef(m, "Plan", (PyObject *)&txpy_plan_type) < 0 ||
      txpy_errors_init(m) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
