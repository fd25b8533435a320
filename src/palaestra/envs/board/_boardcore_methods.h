/* The CPython layer that palaestra's two board cores (_goboard.c and _hexboard.c) share.
 *
 * Each core keeps B boards that write the legal row of the player to move into a row of a caller's
 * bytearray and the black/white/empty planes into a caller's float32 buffer. This header holds what
 * does not depend on the game: taking and checking those two buffers, the board index, the random
 * opponent's draw, and the methods that only play moves (reset, play, play_random, step_random,
 * history, is_over, to_play), with the module's constants. The rules stay in the core's own file.
 *
 * It is a template: a core includes it after its object type, having defined
 *   CORE_TYPE          its object type, with the fields num_boards, cells, width (of a legal row, whose
 *                      last column is resign), stride, legal, planes, has_legal, has_planes and boards
 *                      (an array of its Board, which has history, moves and to_play);
 *   CORE_GAME          the game's name in error messages ("Go", "Hex");
 *   CORE_REPLIES       how many engine actions the random opponent picks among (Go: the points and
 *                      pass; Hex: the cells), given g;
 *   CORE_DOC_PLAY, CORE_DOC_PLAY_RANDOM, CORE_DOC_STEP_RANDOM   the docstrings that name the game's actions;
 * and it defines these functions after it (they are declared here):
 *   int play(CORE_TYPE *g, int b, long action)   the engine action for the player to move: the legal
 *                        count of the next position, 0 once the game is over, -1 with a Python error set;
 *   void clear_board(CORE_TYPE *g, int b)        an empty board, its legal row and planes rewritten;
 *   int board_over(const CORE_TYPE *g, int b)    whether its game is over;
 *   long engine_action(const CORE_TYPE *g, long action)   an env action as the engine's (and back:
 *                        the map is its own inverse);
 *   int legal_column(const CORE_TYPE *g, long action)     an engine action's column in the legal row.
 * The methods are named CORE_TYPE_reset and so on; CORE_METHODS lists them for the type's table.
 */
#include "_boardcore.h"

#define CORE_CAT2(a, b) a##b
#define CORE_CAT(a, b) CORE_CAT2(a, b)
#define CORE_METHOD(name) CORE_CAT(CORE_TYPE, _##name)

/* The core's own rules, defined after this header (see above). */
static int play(CORE_TYPE *g, int b, long action);
static void clear_board(CORE_TYPE *g, int b);
static int board_over(const CORE_TYPE *g, int b);
static long engine_action(const CORE_TYPE *g, long action);
static int legal_column(const CORE_TYPE *g, long action);

static inline float *planes_of(CORE_TYPE *g, int b) { return (float *)g->planes.buf + (Py_ssize_t)b * g->stride; }

static inline uint8_t *row_of(CORE_TYPE *g, int b) { return (uint8_t *)g->legal.buf + (Py_ssize_t)b * g->width; }

/* Takes the caller's legal rows and planes (width and cells already set); 0 with a Python error set if
 * either is missing or too small. */
static int take_buffers(CORE_TYPE *g, PyObject *legal, PyObject *planes, Py_ssize_t stride) {
    g->stride = stride;
    if (PyObject_GetBuffer(legal, &g->legal, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) return 0;
    g->has_legal = 1;
    if (PyObject_GetBuffer(planes, &g->planes, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return 0;
    g->has_planes = 1;
    if (g->legal.len < (Py_ssize_t)g->num_boards * g->width) {
        PyErr_Format(PyExc_ValueError, "legal: need %d bytes, one row of %d per board", g->num_boards * g->width,
                     g->width);
        return 0;
    }
    if (g->planes.itemsize != 4 || strcmp(g->planes.format, "f") != 0 || stride < 3 * g->cells ||
        g->planes.len < (Py_ssize_t)4 * ((g->num_boards - 1) * stride + 3 * g->cells)) {
        PyErr_SetString(PyExc_ValueError,
                        "planes: need a float32 buffer of num_boards rows of planes_stride >= 3 * N * N floats");
        return 0;
    }
    return 1;
}

static void release_buffers(CORE_TYPE *g) {
    if (g->has_legal) PyBuffer_Release(&g->legal);
    if (g->has_planes) PyBuffer_Release(&g->planes);
}

static int board_index(CORE_TYPE *g, PyObject *arg, int *b) {
    long value = PyLong_AsLong(arg);
    if (value == -1 && PyErr_Occurred()) return 0;
    if (value < 0 || value >= g->num_boards) {
        PyErr_Format(PyExc_IndexError, "board %ld out of range (%d boards)", value, g->num_boards);
        return 0;
    }
    *b = (int)value;
    return 1;
}

/* The random opponent's reply on board b, whose player to move has `count` legal actions: as it picks
 * from OpenSpiel's legal_actions() (ascending engine actions), the int(draw() * count)-th of them. -1
 * with a Python error set if draw() fails. */
static long random_reply(CORE_TYPE *g, int b, int count, PyObject *draw) {
    PyObject *drawn = PyObject_CallNoArgs(draw);
    if (drawn == NULL) return -1;
    double r = PyFloat_AsDouble(drawn);
    if (r == -1.0 && PyErr_Occurred()) {
        Py_DECREF(drawn);
        return -1;
    }
    long k = (long)(r * (double)count);
    if (!(r >= 0.0) || k >= count) {
        PyErr_Format(PyExc_ValueError, "draw() returned %R, not a float in [0, 1)", drawn);
        Py_DECREF(drawn);
        return -1;
    }
    Py_DECREF(drawn);
    const uint8_t *row = row_of(g, b);
    const long replies = CORE_REPLIES(g);
    long reply = 0;
    for (; reply < replies; reply++)
        if (row[legal_column(g, reply)] && k-- == 0) break;
    return reply;
}

static int append_event(PyObject *events, int b, int event) {
    PyObject *pair = Py_BuildValue("(ii)", b, event);
    if (pair == NULL) return -1;
    int failed = PyList_Append(events, pair);
    Py_DECREF(pair);
    return failed;
}

static PyObject *CORE_METHOD(reset)(CORE_TYPE *g, PyObject *arg) {
    int b;
    if (!board_index(g, arg, &b)) return NULL;
    clear_board(g, b);
    Py_RETURN_NONE;
}

static PyObject *CORE_METHOD(play)(CORE_TYPE *g, PyObject *const *args, Py_ssize_t nargs) {
    int b;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "play(board, action) takes 2 arguments");
        return NULL;
    }
    if (!board_index(g, args[0], &b)) return NULL;
    long action = PyLong_AsLong(args[1]);
    if (action == -1 && PyErr_Occurred()) return NULL;
    int count = play(g, b, action);
    if (count < 0) return NULL;
    return PyBool_FromLong(count == 0);
}

static PyObject *CORE_METHOD(play_random)(CORE_TYPE *g, PyObject *const *args, Py_ssize_t nargs) {
    int b;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "play_random(board, action, draw) takes 3 arguments");
        return NULL;
    }
    if (!board_index(g, args[0], &b)) return NULL;
    long action = PyLong_AsLong(args[1]);
    if (action == -1 && PyErr_Occurred()) return NULL;
    int count = play(g, b, action);
    if (count < 0) return NULL;
    if (count == 0) return PyLong_FromLong(ENDED_AFTER_MOVE);
    long reply = random_reply(g, b, count, args[2]);
    if (reply < 0) return NULL;
    int next = play(g, b, reply);
    if (next < 0) return NULL;
    return PyLong_FromLong(next == 0 ? ENDED_AFTER_REPLY - reply : reply);
}

/* One step of every board against the random opponent (the vector env's hot path: one call per batch
 * instead of one per board), in env actions; resign is the legal row's last column. */
static PyObject *CORE_METHOD(step_random)(CORE_TYPE *g, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "step_random(actions, over, draws, replies, stop_at_illegal) takes 5 arguments");
        return NULL;
    }
    PyObject *actions = args[0], *over = args[1], *draws = args[2], *replies = args[3];
    int stop_at_illegal = PyObject_IsTrue(args[4]);
    if (stop_at_illegal < 0) return NULL;
    if (!PyList_CheckExact(actions) || !PyList_CheckExact(over) || !PyList_CheckExact(draws) ||
        !PyList_CheckExact(replies) || PyList_GET_SIZE(actions) != g->num_boards ||
        PyList_GET_SIZE(over) != g->num_boards || PyList_GET_SIZE(draws) != g->num_boards ||
        PyList_GET_SIZE(replies) != g->num_boards) {
        PyErr_Format(PyExc_TypeError, "step_random: actions, over, draws and replies must be lists of %d items",
                     g->num_boards);
        return NULL;
    }
    PyObject *events = PyList_New(0);
    if (events == NULL) return NULL;
    const long resign = g->width - 1;
    for (int b = 0; b < g->num_boards; b++) {
        if (PyList_GET_ITEM(over, b) == Py_True) continue;
        long action = PyLong_AsLong(PyList_GET_ITEM(actions, b));
        if (action == -1 && PyErr_Occurred()) goto fail;
        if (action < 0 || action > resign) {
            PyErr_Format(PyExc_ValueError, "step_random: %ld is not a " CORE_GAME " action", action);
            goto fail;
        }
        long engine = engine_action(g, action);
        if (engine == resign || !row_of(g, b)[legal_column(g, engine)]) {
            int illegal = engine != resign;
            if (append_event(events, b, illegal ? STEP_ILLEGAL : STEP_RESIGNED) < 0) goto fail;
            if (illegal && stop_at_illegal) break;
            continue;
        }
        int count = play(g, b, engine);
        if (count < 0) goto fail;
        if (count == 0) {
            if (append_event(events, b, STEP_ENDED) < 0) goto fail;
            continue;
        }
        long reply = random_reply(g, b, count, PyList_GET_ITEM(draws, b));
        if (reply < 0) goto fail;
        int next = play(g, b, reply);
        if (next < 0) goto fail;
        PyObject *env_reply = PyLong_FromLong(engine_action(g, reply));
        if (env_reply == NULL) goto fail;
        PyObject *old = PyList_GET_ITEM(replies, b);
        PyList_SET_ITEM(replies, b, env_reply);
        Py_DECREF(old);
        if (next == 0 && append_event(events, b, STEP_ENDED) < 0) goto fail;
    }
    return events;
fail:
    Py_DECREF(events);
    return NULL;
}

static PyObject *CORE_METHOD(history)(CORE_TYPE *g, PyObject *arg) {
    int b;
    if (!board_index(g, arg, &b)) return NULL;
    const int moves = g->boards[b].moves;
    const int16_t *played = g->boards[b].history;
    PyObject *history = PyList_New(moves);
    if (history == NULL) return NULL;
    for (int i = 0; i < moves; i++) {
        PyObject *action = PyLong_FromLong(played[i]);
        if (action == NULL) {
            Py_DECREF(history);
            return NULL;
        }
        PyList_SET_ITEM(history, i, action);
    }
    return history;
}

static PyObject *CORE_METHOD(is_over)(CORE_TYPE *g, PyObject *arg) {
    int b;
    if (!board_index(g, arg, &b)) return NULL;
    return PyBool_FromLong(board_over(g, b));
}

static PyObject *CORE_METHOD(to_play)(CORE_TYPE *g, PyObject *arg) {
    int b;
    if (!board_index(g, arg, &b)) return NULL;
    return PyLong_FromLong(g->boards[b].to_play - 1);
}

#define CORE_METHODS                                                                                       \
    {"reset", (PyCFunction)CORE_METHOD(reset), METH_O,                                                     \
     "reset(board): an empty board, black to play; its legal row and planes rewritten."},                  \
    {"play", (PyCFunction)(void (*)(void))CORE_METHOD(play), METH_FASTCALL, CORE_DOC_PLAY},                \
    {"play_random", (PyCFunction)(void (*)(void))CORE_METHOD(play_random), METH_FASTCALL,                  \
     CORE_DOC_PLAY_RANDOM},                                                                                \
    {"step_random", (PyCFunction)(void (*)(void))CORE_METHOD(step_random), METH_FASTCALL,                  \
     CORE_DOC_STEP_RANDOM},                                                                                \
    {"history", (PyCFunction)CORE_METHOD(history), METH_O, "history(board) -> the engine actions played."}, \
    {"is_over", (PyCFunction)CORE_METHOD(is_over), METH_O,                                                 \
     "is_over(board) -> whether the game on the board is over."},                                          \
    {"to_play", (PyCFunction)CORE_METHOD(to_play), METH_O, "to_play(board) -> 0 (black) or 1 (white)."}

/* The step_random docstring's common part, after the sentence that names the game's actions. */
#define CORE_DOC_STEP_LISTS                                                                                \
    "Lists of one item per board: the agent's actions; whether the board is to be left alone (True); the\n" \
    "opponents' draw() callables; the replies (set to the opponent's action where it replied, else left).\n" \
    "The events, in board order: (board, STEP_RESIGNED or STEP_ILLEGAL), where nothing was played, and\n"  \
    "(board, STEP_ENDED), where the game ended with the agent's move or the reply. With stop_at_illegal\n" \
    "the boards after the first illegal action are left alone."

/* Creates the module with its type and the constants above; NULL with a Python error set. */
static PyObject *create_core_module(struct PyModuleDef *definition, PyTypeObject *type, const char *type_name) {
    if (PyType_Ready(type) < 0) return NULL;
    PyObject *module = PyModule_Create(definition);
    if (module == NULL) return NULL;
    Py_INCREF(type);
    if (PyModule_AddObject(module, type_name, (PyObject *)type) < 0) {
        Py_DECREF(type);
        Py_DECREF(module);
        return NULL;
    }
    if (PyModule_AddIntConstant(module, "ENDED_AFTER_MOVE", ENDED_AFTER_MOVE) < 0 ||
        PyModule_AddIntConstant(module, "ENDED_AFTER_REPLY", ENDED_AFTER_REPLY) < 0 ||
        PyModule_AddIntConstant(module, "STEP_RESIGNED", STEP_RESIGNED) < 0 ||
        PyModule_AddIntConstant(module, "STEP_ILLEGAL", STEP_ILLEGAL) < 0 ||
        PyModule_AddIntConstant(module, "STEP_ENDED", STEP_ENDED) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}

