/*
 * rondo._fast: the common blocking all-reduce call of the NumPy API, made
 * in C, and the engine requests behind rondo.torch.distributed's common
 * all_reduce, reduce_scatter_tensor and all_gather_into_tensor
 * (allreduce_async, reduce_scatter_async, allgather_into_async, named and
 * called as rondo/_lib.py's, and engine_wait, at the end).
 *
 * Why: a large all-reduce evicts the caches. After it, every Python object
 * the layer touches (each attribute, dict lookup and frame) costs a cache
 * miss. Measured at 1 MiB on 2 ranks, the ctypes path added 5-7 us (3-5%)
 * over the bare ctypes call. This function adds under 1 us
 * (docs/PERFORMANCE.md, "Python").
 *
 * It serves only the plain call:
 *   - both arrays are numpy.ndarray and C-contiguous;
 *   - one supported dtype, the same shape;
 *   - out is writable;
 *   - op and algorithm are keys of the package's tables.
 * For anything else it returns -1 and changes nothing. rondo/__init__.py then
 * takes its careful path, which says what is wrong. That keeps one
 * definition of every rule.
 *
 * It neither includes nor links librondo. rondo/__init__.py hands it the
 * address of rondo_allreduce_algo (from ctypes) and its own tables through
 * setup(). The package thus finds librondo one way (rondo/_lib.py), and this
 * file needs nothing but Python's headers. Without it the package works
 * unchanged, only with a slower common call (docs/python.md).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

typedef int (*allreduce_fn)(void *comm, const void *in, void *out, size_t count,
                            int dtype, int op, int algo);

static allreduce_fn allreduce_algo;  /* rondo_allreduce_algo */
static PyObject *ndarray_type;       /* numpy.ndarray */
static PyObject *dtype_codes;        /* buffer format -> rondo_dtype_t */
static PyObject *op_codes;           /* op name -> rondo_op_t */
static PyObject *algo_codes;         /* None or algorithm name -> rondo_algo_t */

/* setup(allreduce_algo_address, ndarray, dtype_codes, op_codes, algo_codes) */
static PyObject *fast_setup(PyObject *self, PyObject *args)
{
  PyObject *address, *nd, *dt, *ops, *algos;
  (void)self;
  if (!PyArg_ParseTuple(args, "OOO!O!O!", &address, &nd, &PyDict_Type, &dt, &PyDict_Type,
                        &ops, &PyDict_Type, &algos))
    return NULL;
  void *fn = PyLong_AsVoidPtr(address);
  if (fn == NULL) {
    if (!PyErr_Occurred())
      PyErr_SetString(PyExc_ValueError, "rondo._fast.setup: a null function address");
    return NULL;
  }
  if (!PyType_Check(nd)) {
    PyErr_SetString(PyExc_TypeError, "rondo._fast.setup: ndarray must be a type");
    return NULL;
  }
  allreduce_algo = (allreduce_fn)fn;
  Py_INCREF(nd);
  Py_INCREF(dt);
  Py_INCREF(ops);
  Py_INCREF(algos);
  Py_XSETREF(ndarray_type, nd);
  Py_XSETREF(dtype_codes, dt);
  Py_XSETREF(op_codes, ops);
  Py_XSETREF(algo_codes, algos);
  Py_RETURN_NONE;
}

/* The code that table maps key to, or -1 (also for an unhashable key). */
static int lookup(PyObject *table, PyObject *key)
{
  PyObject *v = PyDict_GetItemWithError(table, key);
  if (v == NULL) {
    PyErr_Clear();
    return -1;
  }
  long code = PyLong_AsLong(v);
  if (code < 0 || code > INT32_MAX) {
    PyErr_Clear();
    return -1;
  }
  return (int)code;
}

/* The argument converters of the engine calls below: 0, or -1 with
 * Python's error set. Chained with ||, the first error stops the rest (a
 * conversion must not run while an error is set). */
static int address_arg(PyObject *o, void **v) /* None is NULL */
{
  *v = o == Py_None ? NULL : PyLong_AsVoidPtr(o);
  return *v == NULL && PyErr_Occurred() ? -1 : 0;
}

static int size_arg(PyObject *o, size_t *v)
{
  *v = PyLong_AsSize_t(o);
  return *v == (size_t)-1 && PyErr_Occurred() ? -1 : 0;
}

static int code_arg(PyObject *o, int *v) /* a dtype or op code */
{
  long x = PyLong_AsLong(o);
  if (x == -1 && PyErr_Occurred())
    return -1;
  if (x < INT32_MIN || x > INT32_MAX) {
    PyErr_SetString(PyExc_OverflowError, "rondo._fast: a code out of range");
    return -1;
  }
  *v = (int)x;
  return 0;
}

/* The request as the engine calls return it: the address, or minus st. */
static PyObject *request_or_status(int st, void *req)
{
  if (st != 0)
    return PyLong_FromLong(-st);
  return PyLong_FromVoidPtr(req);
}

/*
 * allreduce(comm_handle, array, out, op, algorithm) -> int
 * rondo_allreduce_algo's status (0: done), or -1: not the plain call,
 * nothing done.
 */
static PyObject *fast_allreduce(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
  (void)self;
  if (nargs != 5) {
    PyErr_SetString(PyExc_TypeError, "rondo._fast.allreduce takes 5 arguments");
    return NULL;
  }
  if (allreduce_algo == NULL)
    return PyLong_FromLong(-1);
  PyObject *array = args[1], *out = args[2];
  if ((PyObject *)Py_TYPE(array) != ndarray_type || (PyObject *)Py_TYPE(out) != ndarray_type)
    return PyLong_FromLong(-1);
  void *comm = PyLong_AsVoidPtr(args[0]);
  if (comm == NULL) {
    PyErr_Clear();
    return PyLong_FromLong(-1);
  }
  int op = lookup(op_codes, args[3]), algo = lookup(algo_codes, args[4]);
  if (op < 0 || algo < 0)
    return PyLong_FromLong(-1);

  Py_buffer in, res;
  const int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT;
  if (PyObject_GetBuffer(array, &in, flags) < 0) {
    PyErr_Clear();
    return PyLong_FromLong(-1);
  }
  if (PyObject_GetBuffer(out, &res, flags | PyBUF_WRITABLE) < 0) {
    PyErr_Clear();
    PyBuffer_Release(&in);
    return PyLong_FromLong(-1);
  }
  int dtype = -1;
  if (strcmp(in.format, res.format) == 0 && in.ndim == res.ndim &&
      in.itemsize == res.itemsize && in.len == res.len && in.itemsize > 0 &&
      (in.ndim == 0 || memcmp(in.shape, res.shape, (size_t)in.ndim * sizeof *in.shape) == 0)) {
    PyObject *fmt = PyUnicode_FromString(in.format);
    if (fmt != NULL) {
      dtype = lookup(dtype_codes, fmt);
      Py_DECREF(fmt);
    } else {
      PyErr_Clear();
    }
  }
  int st = -1;
  if (dtype >= 0) {
    size_t count = (size_t)(in.len / in.itemsize);
    Py_BEGIN_ALLOW_THREADS
    st = allreduce_algo(comm, in.buf, res.buf, count, dtype, op, algo);
    Py_END_ALLOW_THREADS
  }
  PyBuffer_Release(&res);
  PyBuffer_Release(&in);
  return PyLong_FromLong(st);
}

/*
 * The engine requests of rondo.torch.distributed's common calls:
 * rondo_allreduce_async (all_reduce, in place), rondo_reduce_scatter_async
 * (reduce_scatter_tensor) and rondo_allgather_into_async
 * (all_gather_into_tensor, FSDP's and ZeRO's calls) with the caller's
 * options (RONDO_ASYNC_WAIT_NOW among them), and rondo_wait when a Work is
 * waited for, each with the GIL released. Each takes what its C function
 * takes, but the request pointer, as plain integers (addresses, counts,
 * codes: already checked, no objects to look at; the options by address,
 * the last), and returns the request (> 0) or minus the status: the
 * ctypes fallback in backend.py (_submit) takes the same arguments. This
 * only saves the ctypes marshalling.
 */
typedef int (*allreduce_async_fn)(void *comm, const char *name, const void *in, void *out,
                                  size_t count, int dtype, int op, const void *opts,
                                  void **req);
typedef int (*reduce_scatter_async_fn)(void *comm, const char *name, const void *in, void *out,
                                       size_t rows, size_t row_count, int dtype, int op,
                                       const void *opts, void **req);
typedef int (*allgather_into_async_fn)(void *comm, const char *name, const void *in,
                                       size_t rows, void *out, size_t recv_rows,
                                       size_t row_count, int dtype, const void *opts,
                                       void **req);
typedef int (*wait_fn)(void **req);
static allreduce_async_fn allreduce_async;           /* rondo_allreduce_async */
static reduce_scatter_async_fn reduce_scatter_async; /* rondo_reduce_scatter_async */
static allgather_into_async_fn allgather_into_async; /* rondo_allgather_into_async */
static wait_fn wait_request;                         /* rondo_wait */

/* setup_engine(allreduce_async_address, wait_address,
 *              reduce_scatter_async_address, allgather_into_async_address) */
static PyObject *fast_setup_engine(PyObject *self, PyObject *args)
{
  PyObject *a, *w, *r, *g;
  (void)self;
  if (!PyArg_ParseTuple(args, "OOOO", &a, &w, &r, &g))
    return NULL;
  void *fa = PyLong_AsVoidPtr(a), *fw = PyLong_AsVoidPtr(w);
  void *fr = PyLong_AsVoidPtr(r), *fg = PyLong_AsVoidPtr(g);
  if (fa == NULL || fw == NULL || fr == NULL || fg == NULL) {
    if (!PyErr_Occurred())
      PyErr_SetString(PyExc_ValueError, "rondo._fast.setup_engine: a null function address");
    return NULL;
  }
  allreduce_async = (allreduce_async_fn)fa;
  wait_request = (wait_fn)fw;
  reduce_scatter_async = (reduce_scatter_async_fn)fr;
  allgather_into_async = (allgather_into_async_fn)fg;
  Py_RETURN_NONE;
}

/*
 * What every engine submission below takes: the comm (args[0]), the name
 * (args[1]) and the options' address (the last), after setup_engine.
 * 0, or -1 with Python's error set.
 */
typedef struct {
  void *comm;
  const char *name;
  void *opts;
} engine_call_t;

static int engine_call(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t want, int ready,
                       const char *what, engine_call_t *c)
{
  if (nargs != want || !ready) {
    PyErr_Format(PyExc_TypeError, "rondo._fast.%s takes %zd arguments, after setup_engine",
                 what, want);
    return -1;
  }
  if (address_arg(args[0], &c->comm) < 0 || (c->name = PyBytes_AsString(args[1])) == NULL ||
      address_arg(args[want - 1], &c->opts) < 0)
    return -1;
  return 0;
}

/* allreduce_async(comm_handle, name, in_address, out_address, count, dtype,
 *   op, opts_address) */
static PyObject *fast_allreduce_async(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
  (void)self;
  engine_call_t c;
  void *in, *out;
  size_t count;
  int dtype, op;
  if (engine_call(args, nargs, 8, allreduce_async != NULL, "allreduce_async", &c) < 0 ||
      address_arg(args[2], &in) < 0 || address_arg(args[3], &out) < 0 ||
      size_arg(args[4], &count) < 0 || code_arg(args[5], &dtype) < 0 ||
      code_arg(args[6], &op) < 0)
    return NULL;
  void *req = NULL;
  int st;
  Py_BEGIN_ALLOW_THREADS
  st = allreduce_async(c.comm, c.name, in, out, count, dtype, op, c.opts, &req);
  Py_END_ALLOW_THREADS
  return request_or_status(st, req);
}

/* reduce_scatter_async(comm_handle, name, in_address, out_address, rows,
 *   row_count, dtype, op, opts_address) */
static PyObject *fast_reduce_scatter_async(PyObject *self, PyObject *const *args,
                                           Py_ssize_t nargs)
{
  (void)self;
  engine_call_t c;
  void *in, *out;
  size_t rows, row_count;
  int dtype, op;
  if (engine_call(args, nargs, 9, reduce_scatter_async != NULL, "reduce_scatter_async", &c) < 0 ||
      address_arg(args[2], &in) < 0 || address_arg(args[3], &out) < 0 ||
      size_arg(args[4], &rows) < 0 || size_arg(args[5], &row_count) < 0 ||
      code_arg(args[6], &dtype) < 0 || code_arg(args[7], &op) < 0)
    return NULL;
  void *req = NULL;
  int st;
  Py_BEGIN_ALLOW_THREADS
  st = reduce_scatter_async(c.comm, c.name, in, out, rows, row_count, dtype, op, c.opts, &req);
  Py_END_ALLOW_THREADS
  return request_or_status(st, req);
}

/* allgather_into_async(comm_handle, name, in_address, rows, out_address,
 *   recv_rows, row_count, dtype, opts_address) */
static PyObject *fast_allgather_into_async(PyObject *self, PyObject *const *args,
                                           Py_ssize_t nargs)
{
  (void)self;
  engine_call_t c;
  void *in, *out;
  size_t rows, recv_rows, row_count;
  int dtype;
  if (engine_call(args, nargs, 9, allgather_into_async != NULL, "allgather_into_async", &c) < 0 ||
      address_arg(args[2], &in) < 0 || size_arg(args[3], &rows) < 0 ||
      address_arg(args[4], &out) < 0 || size_arg(args[5], &recv_rows) < 0 ||
      size_arg(args[6], &row_count) < 0 || code_arg(args[7], &dtype) < 0)
    return NULL;
  void *req = NULL;
  int st;
  Py_BEGIN_ALLOW_THREADS
  st = allgather_into_async(c.comm, c.name, in, rows, out, recv_rows, row_count, dtype, c.opts,
                            &req);
  Py_END_ALLOW_THREADS
  return request_or_status(st, req);
}

/* engine_wait(request) -> the status of rondo_wait (0: done) */
static PyObject *fast_engine_wait(PyObject *self, PyObject *arg)
{
  (void)self;
  void *req = PyLong_AsVoidPtr(arg);
  if (req == NULL || wait_request == NULL) {
    if (!PyErr_Occurred())
      PyErr_SetString(PyExc_ValueError, "rondo._fast.engine_wait: no request, or no setup_engine");
    return NULL;
  }
  int st;
  Py_BEGIN_ALLOW_THREADS
  st = wait_request(&req);
  Py_END_ALLOW_THREADS
  return PyLong_FromLong(st);
}

static PyMethodDef fast_methods[] = {
  {"setup_engine", fast_setup_engine, METH_VARARGS,
   "setup_engine(allreduce_async_address, wait_address, reduce_scatter_async_address, "
   "allgather_into_async_address)"},
  {"allreduce_async", (PyCFunction)(void (*)(void))fast_allreduce_async, METH_FASTCALL,
   "allreduce_async(comm_handle, name, in_address, out_address, count, dtype, op, "
   "opts_address) -> the request, or minus the submission's status"},
  {"reduce_scatter_async", (PyCFunction)(void (*)(void))fast_reduce_scatter_async,
   METH_FASTCALL,
   "reduce_scatter_async(comm_handle, name, in_address, out_address, rows, row_count, dtype, "
   "op, opts_address) -> the request, or minus the submission's status"},
  {"allgather_into_async", (PyCFunction)(void (*)(void))fast_allgather_into_async,
   METH_FASTCALL,
   "allgather_into_async(comm_handle, name, in_address, rows, out_address, recv_rows, "
   "row_count, dtype, opts_address) -> the request, or minus the submission's status"},
  {"engine_wait", fast_engine_wait, METH_O, "engine_wait(request) -> the wait's status"},
  {"setup", fast_setup, METH_VARARGS,
   "setup(allreduce_algo_address, ndarray, dtype_codes, op_codes, algo_codes)"},
  {"allreduce", (PyCFunction)(void (*)(void))fast_allreduce, METH_FASTCALL,
   "allreduce(comm_handle, array, out, op, algorithm) -> status, or -1: not the plain call"},
  {NULL, NULL, 0, NULL},
};

static struct PyModuleDef fast_module = {
  PyModuleDef_HEAD_INIT, "rondo._fast",
  "The NumPy API's common blocking all-reduce, and the torch backend's common "
  "engine requests, in C (see _fast.c).", -1, fast_methods,
  NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__fast(void)
{
  return PyModule_Create(&fast_module);
}
