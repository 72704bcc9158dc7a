/* _eroica_frames: the Python threads' stacks, read in one call with the GIL held.
 *
 * Why C: the stack sampler (eroica/stack_sampler.py) reads the training thread's stack from
 * another thread. Done in Python (sys._current_frames(), then f_code, f_lineno and f_back frame
 * by frame), it makes frame objects for the other thread's frames and holds them across
 * bytecodes at which the interpreter may hand the GIL to that thread, which then returns from
 * those frames while they are held. On CPython 3.11 that path has crashed processes whose
 * stacks were sampled so (a use-after-free: sentry-python #2386 and ddtrace #13567 saw it in
 * their samplers; cpython #106092). Two rank deaths here point at it (neither reproduced on
 * demand): a clean-clone CI run whose rank died with SIGSEGV in `frame.f_code` on a frame whose
 * interpreter frame was gone, and a 5-rank job with two loader workers a rank whose rank died
 * with SIGSEGV in its first window, in a thread other than its training thread.
 *
 * Here every thread's frames are walked as the interpreter keeps them (the
 * _PyInterpreterFrame chain faulthandler walks too), without making a frame object, and
 * without running Python code or allocating Python objects until the walk is over: nothing can
 * hand the GIL over meanwhile, so no thread moves while it is read. Only the code objects are
 * kept (a reference each) to build the result after the walk.
 *
 * stacks(thread_ids, max_depth, root_code) -> {thread id: ((file, line, function), ...)}
 *   innermost frame first; thread_ids: a tuple of thread idents (threading.get_ident()), or
 *   None for every thread; frames from root_code outwards are left out (None: none).
 *
 * CPython 3.11 only: its frames are internal structures that change with each minor version
 * (the sampler falls back to its Python path elsewhere, and says which one it used).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#if PY_VERSION_HEX < 0x030B0000 || PY_VERSION_HEX >= 0x030C0000
#error "_eroica_frames reads CPython 3.11's interpreter frames"
#endif

#define Py_BUILD_CORE 1
#include <internal/pycore_frame.h>
#undef Py_BUILD_CORE

enum { kMaxThreads = 64, kMaxDepth = 256 };

typedef struct {
  unsigned long id;
  int depth;
  PyCodeObject *code[kMaxDepth]; /* a reference each, taken during the walk */
  int line[kMaxDepth];
} ThreadStack;

static int Wanted(unsigned long id, const unsigned long *ids, Py_ssize_t count) {
  if (count < 0) return 1; /* None: every thread */
  for (Py_ssize_t i = 0; i < count; ++i) {
    if (ids[i] == id) return 1;
  }
  return 0;
}

/* The walk: no allocation, no Python code, so the GIL stays with this thread throughout. */
static int Walk(ThreadStack *out, int max_threads, int max_depth, const unsigned long *ids, Py_ssize_t count,
                PyObject *root) {
  int threads = 0;
  PyInterpreterState *interp = PyInterpreterState_Get();
  for (PyThreadState *t = PyInterpreterState_ThreadHead(interp); t != NULL && threads < max_threads;
       t = PyThreadState_Next(t)) {
    if (!Wanted(t->thread_id, ids, count) || t->cframe == NULL) continue;
    ThreadStack *stack = &out[threads];
    stack->id = t->thread_id;
    stack->depth = 0;
    for (_PyInterpreterFrame *f = t->cframe->current_frame; f != NULL && stack->depth < max_depth;
         f = f->previous) {
      if (_PyFrame_IsIncomplete(f)) continue; /* being set up: no line yet, as f_back skips it */
      PyCodeObject *code = f->f_code;
      if ((PyObject *)code == root) break;
      Py_INCREF(code);
      stack->code[stack->depth] = code;
      int line = PyCode_Addr2Line(code, _PyInterpreterFrame_LASTI(f) * (int)sizeof(_Py_CODEUNIT));
      stack->line[stack->depth] = line > 0 ? line : 0; /* no line: 0, as `f_lineno or 0` */
      ++stack->depth;
    }
    if (stack->depth > 0) ++threads;
  }
  return threads;
}

static void Release(ThreadStack *stacks, int threads) {
  for (int k = 0; k < threads; ++k) {
    for (int i = 0; i < stacks[k].depth; ++i) Py_DECREF(stacks[k].code[i]);
  }
}

static PyObject *Build(const ThreadStack *stacks, int threads) {
  PyObject *result = PyDict_New();
  if (result == NULL) return NULL;
  for (int k = 0; k < threads; ++k) {
    const ThreadStack *stack = &stacks[k];
    PyObject *frames = PyTuple_New(stack->depth);
    if (frames == NULL) goto fail;
    for (int i = 0; i < stack->depth; ++i) {
      PyObject *key = Py_BuildValue("(OiO)", stack->code[i]->co_filename, stack->line[i], stack->code[i]->co_name);
      if (key == NULL) {
        Py_DECREF(frames);
        goto fail;
      }
      PyTuple_SET_ITEM(frames, i, key);
    }
    PyObject *id = PyLong_FromUnsignedLong(stack->id);
    int failed = id == NULL || PyDict_SetItem(result, id, frames) < 0;
    Py_XDECREF(id);
    Py_DECREF(frames);
    if (failed) goto fail;
  }
  return result;
fail:
  Py_DECREF(result);
  return NULL;
}

static PyObject *stacks(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *wanted = Py_None, *root = Py_None;
  int max_depth = 64;
  if (!PyArg_ParseTuple(args, "|OiO:stacks", &wanted, &max_depth, &root)) return NULL;
  if (max_depth < 0 || max_depth > kMaxDepth) max_depth = kMaxDepth;
  unsigned long ids[kMaxThreads];
  Py_ssize_t count = -1;
  if (wanted != Py_None) {
    if (!PyTuple_Check(wanted)) {
      PyErr_SetString(PyExc_TypeError, "stacks: thread_ids must be a tuple or None");
      return NULL;
    }
    count = PyTuple_GET_SIZE(wanted);
    if (count > kMaxThreads) count = kMaxThreads;
    for (Py_ssize_t i = 0; i < count; ++i) {
      ids[i] = PyLong_AsUnsignedLong(PyTuple_GET_ITEM(wanted, i));
      if (ids[i] == (unsigned long)-1 && PyErr_Occurred()) return NULL;
    }
  }
  /* Allocated before the walk: an allocation inside it could start a collection, whose
     callbacks run Python code. */
  ThreadStack *buffer = PyMem_Malloc(sizeof(ThreadStack) * kMaxThreads);
  if (buffer == NULL) return PyErr_NoMemory();
  int threads = Walk(buffer, kMaxThreads, max_depth, ids, count, root == Py_None ? NULL : root);
  PyObject *result = Build(buffer, threads);
  Release(buffer, threads);
  PyMem_Free(buffer);
  return result;
}

static PyMethodDef kMethods[] = {
    {"stacks", stacks, METH_VARARGS,
     "stacks(thread_ids=None, max_depth=64, root_code=None) -> {thread id: ((file, line, function), ...)}, "
     "innermost first, read with the GIL held and no frame object made"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef kModule = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_eroica_frames",
    .m_doc = "The Python threads' stacks, read in one call with the GIL held.",
    .m_size = -1,
    .m_methods = kMethods,
};

PyMODINIT_FUNC PyInit__eroica_frames(void) {
  /* The frames' layout is the build's interpreter's, to its patch release: another one is
     refused here (the sampler then uses its Python path), never read wrong. */
  if ((Py_Version & 0xFFFFFF00UL) != ((unsigned long)PY_VERSION_HEX & 0xFFFFFF00UL)) {
    PyErr_Format(PyExc_ImportError, "_eroica_frames was built for Python %s, not this interpreter", PY_VERSION);
    return NULL;
  }
  return PyModule_Create(&kModule);
}
