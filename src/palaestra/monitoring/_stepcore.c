/* The single Monitor's step, in C: the common path without a Python frame.
 *
 * palaestra.Monitor's per-step work is one check and two counters (see monitor.py, where the same
 * logic is written in Python for where this extension is not built). In Python that work sits in a
 * frame of its own, and the frame is most of its cost: about 100 ns a step against 220 ns for
 * Gymnasium's RecordEpisodeStatistics, at the edge of issue 27's target of 0.4. A StepCounter is
 * the Monitor's ``step`` itself (set on the instance), so a step is one C call around the env's:
 *
 *     if override is not None: return override(action)     # before reset, recording, true rewards
 *     result = env_step(action)
 *     steps += 1; reward += result[1]
 *     if result[2] or result[3]: on_end(result[2], result[3])
 *     return result
 *
 * ``reward += r`` keeps Python's meaning (the type of the sum is what Python's ``+=`` gives, so a
 * float32 reward sums as it would in the Python path); two exact floats are added as doubles.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *env_step;  /* the wrapped env's bound step */
    PyObject *on_end;    /* called as on_end(terminated, truncated) when an episode ends */
    PyObject *override;  /* None, or what a step calls instead of the common path */
    PyObject *reward;    /* the running episode's reward */
    Py_ssize_t steps;    /* the running episode's steps */
} StepCounter;

static PyObject *
add_reward(PyObject *sum, PyObject *reward)
{
    if (PyFloat_CheckExact(sum) && PyFloat_CheckExact(reward)) {
        return PyFloat_FromDouble(PyFloat_AS_DOUBLE(sum) + PyFloat_AS_DOUBLE(reward));
    }
    return PyNumber_InPlaceAdd(sum, reward);
}

/* result[i] of a step's result, a new reference (any sequence, as result[i] in Python) */
static PyObject *
item(PyObject *result, Py_ssize_t i)
{
    if (PyTuple_CheckExact(result) && PyTuple_GET_SIZE(result) > i) {
        PyObject *value = PyTuple_GET_ITEM(result, i);
        Py_INCREF(value);
        return value;
    }
    return PySequence_GetItem(result, i);
}

static PyObject *
step_common(StepCounter *self, PyObject *action)
{
    PyObject *result = PyObject_CallOneArg(self->env_step, action);
    if (result == NULL) {
        return NULL;
    }
    PyObject *reward = item(result, 1);
    if (reward == NULL) {
        goto fail;
    }
    PyObject *sum = add_reward(self->reward, reward);
    Py_DECREF(reward);
    if (sum == NULL) {
        goto fail;
    }
    self->steps += 1;
    Py_SETREF(self->reward, sum);

    PyObject *terminated = item(result, 2);
    if (terminated == NULL) {
        goto fail;
    }
    int ended = PyObject_IsTrue(terminated);
    PyObject *truncated = NULL;
    if (ended == 0) {
        truncated = item(result, 3);
        ended = truncated == NULL ? -1 : PyObject_IsTrue(truncated);
    }
    if (ended == 1) {
        if (truncated == NULL) {
            truncated = item(result, 3);
        }
        PyObject *done = truncated == NULL ? NULL : PyObject_CallFunctionObjArgs(self->on_end, terminated, truncated, NULL);
        if (done == NULL) {
            ended = -1;
        }
        Py_XDECREF(done);
    }
    Py_DECREF(terminated);
    Py_XDECREF(truncated);
    if (ended < 0) {
        goto fail;
    }
    return result;
fail:
    Py_DECREF(result);
    return NULL;
}

static PyObject *
StepCounter_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    StepCounter *self = (StepCounter *)callable;
    if (PyVectorcall_NARGS(nargsf) != 1 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0)) {
        PyErr_SetString(PyExc_TypeError, "step() takes exactly one argument (the action)");
        return NULL;
    }
    if (self->override != Py_None) {
        return PyObject_CallOneArg(self->override, args[0]);
    }
    return step_common(self, args[0]);
}

static int
StepCounter_init(StepCounter *self, PyObject *args, PyObject *kwds)
{
    static char *keywords[] = {"env_step", "on_end", NULL};
    PyObject *env_step, *on_end;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO:StepCounter", keywords, &env_step, &on_end)) {
        return -1;
    }
    if (!PyCallable_Check(env_step) || !PyCallable_Check(on_end)) {
        PyErr_SetString(PyExc_TypeError, "StepCounter(env_step, on_end): both must be callable");
        return -1;
    }
    Py_INCREF(env_step);
    Py_XSETREF(self->env_step, env_step);
    Py_INCREF(on_end);
    Py_XSETREF(self->on_end, on_end);
    Py_INCREF(Py_None);
    Py_XSETREF(self->override, Py_None);
    PyObject *zero = PyFloat_FromDouble(0.0);
    if (zero == NULL) {
        return -1;
    }
    Py_XSETREF(self->reward, zero);
    self->steps = 0;
    return 0;
}

static PyObject *
StepCounter_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    StepCounter *self = (StepCounter *)type->tp_alloc(type, 0);
    if (self != NULL) {
        self->vectorcall = StepCounter_vectorcall;
    }
    return (PyObject *)self;
}

static int
StepCounter_traverse(StepCounter *self, visitproc visit, void *arg)
{
    Py_VISIT(self->env_step);
    Py_VISIT(self->on_end);
    Py_VISIT(self->override);
    Py_VISIT(self->reward);
    return 0;
}

static int
StepCounter_clear(StepCounter *self)
{
    Py_CLEAR(self->env_step);
    Py_CLEAR(self->on_end);
    Py_CLEAR(self->override);
    Py_CLEAR(self->reward);
    return 0;
}

static void
StepCounter_dealloc(StepCounter *self)
{
    PyObject_GC_UnTrack(self);
    StepCounter_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* override and reward can be set from Python; neither may be deleted */
static PyObject *
get_override(StepCounter *self, void *closure)
{
    Py_INCREF(self->override);
    return self->override;
}

static int
set_override(StepCounter *self, PyObject *value, void *closure)
{
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "override cannot be deleted (set it to None)");
        return -1;
    }
    if (value != Py_None && !PyCallable_Check(value)) {
        PyErr_SetString(PyExc_TypeError, "override must be None or callable");
        return -1;
    }
    Py_INCREF(value);
    Py_SETREF(self->override, value);
    return 0;
}

static PyObject *
get_reward(StepCounter *self, void *closure)
{
    Py_INCREF(self->reward);
    return self->reward;
}

static int
set_reward(StepCounter *self, PyObject *value, void *closure)
{
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "reward cannot be deleted");
        return -1;
    }
    Py_INCREF(value);
    Py_SETREF(self->reward, value);
    return 0;
}

static PyGetSetDef StepCounter_getset[] = {
    {"override", (getter)get_override, (setter)set_override, "None, or what a step calls instead", NULL},
    {"reward", (getter)get_reward, (setter)set_reward, "the running episode's reward", NULL},
    {NULL},
};

static PyMemberDef StepCounter_members[] = {
    {"steps", T_PYSSIZET, offsetof(StepCounter, steps), 0, "the running episode's steps"},
    {NULL},
};

static PyTypeObject StepCounterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "palaestra.monitoring._stepcore.StepCounter",
    .tp_doc = PyDoc_STR("StepCounter(env_step, on_end): a Monitor's step (see monitor.py)"),
    .tp_basicsize = sizeof(StepCounter),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_new = StepCounter_new,
    .tp_init = (initproc)StepCounter_init,
    .tp_dealloc = (destructor)StepCounter_dealloc,
    .tp_traverse = (traverseproc)StepCounter_traverse,
    .tp_clear = (inquiry)StepCounter_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(StepCounter, vectorcall),
    .tp_members = StepCounter_members,
    .tp_getset = StepCounter_getset,
};

static struct PyModuleDef stepcore_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "palaestra.monitoring._stepcore",
    .m_doc = "The single Monitor's step without a Python frame (see _stepcore.c).",
    .m_size = -1,
};

PyMODINIT_FUNC
PyInit__stepcore(void)
{
    if (PyType_Ready(&StepCounterType) < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&stepcore_module);
    if (module == NULL) {
        return NULL;
    }
    Py_INCREF(&StepCounterType);
    if (PyModule_AddObject(module, "StepCounter", (PyObject *)&StepCounterType) < 0) {
        Py_DECREF(&StepCounterType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
