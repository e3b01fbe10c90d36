/* SPDX-License-Identifier: MIT */
/* The extension module txattn._txattn: what its files share. The Python package (txattn/__init__.py)
 * is the public face; these are its private building blocks. */
#ifndef TXPY_TXPY_H
#define TXPY_TXPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <txattn/txattn.h>

/* A txattn_context; plans keep a reference to it, so it outlives them. */
typedef struct txpy_context {
  PyObject_HEAD txattn_context *ctx;
} txpy_context;

/* A txattn_plan and the problem it was made for (resolved: every default filled in). */
typedef struct txpy_plan {
  PyObject_HEAD txattn_plan *plan;
  txpy_context *context;
  txattn_problem problem;
} txpy_plan;

extern PyTypeObject txpy_context_type, txpy_plan_type;

/* Raises the txattn.Error subclass of status with txattn_last_error()'s message (read by the
   caller on the thread that failed and passed as message). Returns NULL. */
PyObject *txpy_raise_status(txattn_status status, const char *message);
/* Module init: creates txattn.Error and its subclasses and adds them to m; 0 or -1. */
int txpy_errors_init(PyObject *m);

/* The calls (calls.c), METH_FASTCALL functions of the module. Every library call that computes or
   loads runs with the GIL released (PyEval_SaveThread), after every Python object it needs was
   read: other Python threads run meanwhile, and may call in too. */
PyObject *txpy_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *txpy_merge(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* The problem's tensors' shapes as Python tuples, for Plan.problem: a dict */
PyObject *txpy_problem_dict(const txattn_problem *p);

#endif
