/* palaestra's Hex board core: B boards under OpenSpiel's Hex rules (no swap), kept in step move by move.
 *
 * What palaestra's single Hex env needs on every move against the random opponent, without asking
 * OpenSpiel: the legal moves of the player to move (written into a row of a caller's bytearray), the
 * black/white/empty planes (written into a caller's float32 buffer), whether the game is over and who
 * won, the moves played, and the random opponent's replies. OpenSpiel stays the reference: the env
 * rebuilds its OpenSpiel state from the moves when it is read, plays every other opponent (and the
 * swap rule) on it, and falls back to it where this extension is not built; tests/envs/test_hex_core.py
 * plays both side by side and compares every move (see env.py).
 *
 * The rules are OpenSpiel's (open_spiel/games/hex): cells r * N + c, row 0 at the top; black (first to
 * move) joins the top and bottom rows, white the left and right columns; a cell touches (r-1, c),
 * (r-1, c+1), (r, c-1), (r, c+1), (r+1, c-1) and (r+1, c); every empty cell is legal; the game is over
 * when the player who just moved joins its two edges (Hex has no draws). Hex cells need no
 * translation between the engine's and the 2017 gym's numbering.
 *
 * Each board: a colour per cell and a union-find forest over the cells plus four virtual cells, the
 * edges, which an edge cell of the edge's colour joins when played; a move unites the stone with its
 * neighbours of its colour, and the game is won when the mover's two edges share a root. Only the
 * played cell's entries of the legal row and the planes change.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EMPTY 0
#define BLACK 1
#define WHITE 2
#define MAX_SIZE 25
#define MAX_CELLS (MAX_SIZE * MAX_SIZE)

/* Return codes of play_random() (as _goboard.c's): the game ended after the agent's move; or after
 * the reply r, as ENDED_AFTER_REPLY - r. */
#define ENDED_AFTER_MOVE (-1)
#define ENDED_AFTER_REPLY (-2)

/* Events of step_random() on a board (as _goboard.c's): the agent resigned, chose an illegal move, or
 * the game ended. */
#define STEP_RESIGNED 1
#define STEP_ILLEGAL 2
#define STEP_ENDED 3

typedef struct {
    uint8_t color[MAX_CELLS];
    int16_t parent[MAX_CELLS + 4]; /* the cells, then the edges: top, bottom, left, right */
    int16_t history[MAX_CELLS];
    int moves;
    int to_play;
    int winner; /* BLACK or WHITE once the game is over, else EMPTY */
} Board;

typedef struct {
    PyObject_HEAD
    int num_boards;
    int n;
    int cells;
    int width;         /* of a legal row: the cells, resign */
    Py_ssize_t stride; /* floats per board in the planes buffer */
    Board *boards;
    Py_buffer legal;
    Py_buffer planes;
    int has_legal;
    int has_planes;
    int16_t neighbours[MAX_CELLS][6]; /* -1 where a neighbour would be off the board */
} HexBoards;

static inline float *planes_of(HexBoards *g, int b) { return (float *)g->planes.buf + (Py_ssize_t)b * g->stride; }

static inline uint8_t *row_of(HexBoards *g, int b) { return (uint8_t *)g->legal.buf + (Py_ssize_t)b * g->width; }

static inline int find(int16_t *parent, int x) {
    while (parent[x] != x) {
        parent[x] = parent[parent[x]]; /* path halving */
        x = parent[x];
    }
    return x;
}

static inline void unite(int16_t *parent, int x, int y) {
    x = find(parent, x);
    y = find(parent, y);
    if (x != y) parent[x] = (int16_t)y;
}

static void clear_board(HexBoards *g, int b) {
    Board *board = &g->boards[b];
    memset(board->color, EMPTY, sizeof board->color);
    for (int i = 0; i < g->cells + 4; i++) board->parent[i] = (int16_t)i;
    board->moves = 0;
    board->to_play = BLACK;
    board->winner = EMPTY;
    float *planes = planes_of(g, b);
    for (int i = 0; i < 2 * g->cells; i++) planes[i] = 0.0f;
    for (int i = 2 * g->cells; i < 3 * g->cells; i++) planes[i] = 1.0f;
    memset(row_of(g, b), 1, (size_t)g->width);
}

/* Plays engine action `action` for the player to move on board b; the legal count of the next
 * position (the empty cells), 0 once the game is over (the row is then all 0, resign too), or -1 with
 * a Python error set. */
static int play(HexBoards *g, int b, long action) {
    Board *board = &g->boards[b];
    uint8_t *row = row_of(g, b);
    if (board->winner != EMPTY) {
        PyErr_Format(PyExc_ValueError, "board %d: the game is over", b);
        return -1;
    }
    if (action < 0 || action >= g->cells || !row[action]) {
        PyErr_Format(PyExc_ValueError, "board %d: %ld is not a legal engine action for the player to move", b,
                     action);
        return -1;
    }
    int cell = (int)action, color = board->to_play, n = g->n;
    int16_t *parent = board->parent;
    board->color[cell] = (uint8_t)color;
    board->history[board->moves++] = (int16_t)cell;
    row[cell] = 0;
    float *planes = planes_of(g, b);
    planes[(color - 1) * g->cells + cell] = 1.0f;
    planes[2 * g->cells + cell] = 0.0f;
    for (int d = 0; d < 6; d++) {
        int q = g->neighbours[cell][d];
        if (q >= 0 && board->color[q] == color) unite(parent, cell, q);
    }
    int first, second; /* the mover's edges */
    if (color == BLACK) {
        first = g->cells; /* top */
        second = g->cells + 1;
        if (cell < n) unite(parent, cell, first);
        if (cell >= g->cells - n) unite(parent, cell, second);
    } else {
        first = g->cells + 2; /* left */
        second = g->cells + 3;
        if (cell % n == 0) unite(parent, cell, first);
        if (cell % n == n - 1) unite(parent, cell, second);
    }
    board->to_play = 3 - color;
    if (find(parent, first) == find(parent, second)) {
        board->winner = color;
        memset(row, 0, (size_t)g->width);
        return 0;
    }
    return g->cells - board->moves;
}

/* -- the Python type ----------------------------------------------------------------------------- */
static int board_index(HexBoards *g, PyObject *arg, int *b) {
    long value = PyLong_AsLong(arg);
    if (value == -1 && PyErr_Occurred()) return 0;
    if (value < 0 || value >= g->num_boards) {
        PyErr_Format(PyExc_IndexError, "board %ld out of range (%d boards)", value, g->num_boards);
        return 0;
    }
    *b = (int)value;
    return 1;
}

static PyObject *HexBoards_reset(HexBoards *g, PyObject *arg) {
    int b;
    if (!board_index(g, arg, &b)) return NULL;
    clear_board(g, b);
    Py_RETURN_NONE;
}

static PyObject *HexBoards_play(HexBoards *g, PyObject *const *args, Py_ssize_t nargs) {
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

/* The random opponent's reply on board b, whose player to move has `count` legal actions: as it
 * picks from OpenSpiel's legal_actions() (the empty cells, ascending), the int(draw() * count)-th of
 * them. -1 with a Python error set if draw() fails. */
static long random_reply(HexBoards *g, int b, int count, PyObject *draw) {
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
    long reply = 0;
    for (; reply < g->cells; reply++)
        if (row[reply] && k-- == 0) break;
    return reply;
}

static PyObject *HexBoards_play_random(HexBoards *g, PyObject *const *args, Py_ssize_t nargs) {
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

static int append_event(PyObject *events, int b, int event) {
    PyObject *pair = Py_BuildValue("(ii)", b, event);
    if (pair == NULL) return -1;
    int failed = PyList_Append(events, pair);
    Py_DECREF(pair);
    return failed;
}

/* One step of every board against the random opponent (the vector env's hot path: one call per
 * batch instead of one per board). Hex actions are engine actions; resign is the legal row's last
 * column. */
static PyObject *HexBoards_step_random(HexBoards *g, PyObject *const *args, Py_ssize_t nargs) {
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
            PyErr_Format(PyExc_ValueError, "step_random: %ld is not a Hex action", action);
            goto fail;
        }
        if (action == resign || !row_of(g, b)[action]) {
            int illegal = action != resign;
            if (append_event(events, b, illegal ? STEP_ILLEGAL : STEP_RESIGNED) < 0) goto fail;
            if (illegal && stop_at_illegal) break;
            continue;
        }
        int count = play(g, b, action);
        if (count < 0) goto fail;
        if (count == 0) {
            if (append_event(events, b, STEP_ENDED) < 0) goto fail;
            continue;
        }
        long reply = random_reply(g, b, count, PyList_GET_ITEM(draws, b));
        if (reply < 0) goto fail;
        int next = play(g, b, reply);
        if (next < 0) goto fail;
        PyObject *reply_object = PyLong_FromLong(reply);
        if (reply_object == NULL) goto fail;
        PyObject *old = PyList_GET_ITEM(replies, b);
        PyList_SET_ITEM(replies, b, reply_object);
        Py_DECREF(old);
        if (next == 0 && append_event(events, b, STEP_ENDED) < 0) goto fail;
    }
    return events;
fail:
    Py_DECREF(events);
    return NULL;
}

static PyObject *HexBoards_history(HexBoards *g, PyObject *arg) {
    int b;
    if (!board_index(g, arg, &b)) return NULL;
    const Board *board = &g->boards[b];
    PyObject *history = PyList_New(board->moves);
    if (history == NULL) return NULL;
    for (int i = 0; i < board->moves; i++) {
        PyObject *action = PyLong_FromLong(board->history[i]);
        if (action == NULL) {
            Py_DECREF(history);
            return NULL;
        }
        PyList_SET_ITEM(history, i, action);
    }
    return history;
}

static PyObject *HexBoards_winner(HexBoards *g, PyObject *arg) {
    int b;
    if (!board_index(g, arg, &b)) return NULL;
    int winner = g->boards[b].winner;
    if (winner == EMPTY) Py_RETURN_NONE;
    return PyLong_FromLong(winner - 1);
}

static PyObject *HexBoards_is_over(HexBoards *g, PyObject *arg) {
    int b;
    if (!board_index(g, arg, &b)) return NULL;
    return PyBool_FromLong(g->boards[b].winner != EMPTY);
}

static PyObject *HexBoards_to_play(HexBoards *g, PyObject *arg) {
    int b;
    if (!board_index(g, arg, &b)) return NULL;
    return PyLong_FromLong(g->boards[b].to_play - 1);
}

static void HexBoards_dealloc(HexBoards *g) {
    free(g->boards);
    if (g->has_legal) PyBuffer_Release(&g->legal);
    if (g->has_planes) PyBuffer_Release(&g->planes);
    Py_TYPE(g)->tp_free((PyObject *)g);
}

static int HexBoards_init(HexBoards *g, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"num_boards", "board_size", "legal", "planes", "planes_stride", NULL};
    int num_boards, n;
    Py_ssize_t stride;
    PyObject *legal, *planes;
    if (g->boards != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "HexBoards is initialised once");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "iiOOn", keywords, &num_boards, &n, &legal, &planes, &stride))
        return -1;
    if (num_boards < 1 || n < 2 || n > MAX_SIZE) { /* OpenSpiel never ends a 1x1 game: not played here */
        PyErr_Format(PyExc_ValueError, "HexBoards: need num_boards >= 1, board_size 2..%d", MAX_SIZE);
        return -1;
    }
    g->num_boards = num_boards;
    g->n = n;
    g->cells = n * n;
    g->width = g->cells + 1;
    g->stride = stride;
    if (PyObject_GetBuffer(legal, &g->legal, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) return -1;
    g->has_legal = 1;
    if (PyObject_GetBuffer(planes, &g->planes, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    g->has_planes = 1;
    if (g->legal.len < (Py_ssize_t)num_boards * g->width) {
        PyErr_Format(PyExc_ValueError, "legal: need %d bytes, one row of %d per board", num_boards * g->width,
                     g->width);
        return -1;
    }
    if (g->planes.itemsize != 4 || strcmp(g->planes.format, "f") != 0 || stride < 3 * g->cells ||
        g->planes.len < (Py_ssize_t)4 * ((num_boards - 1) * stride + 3 * g->cells)) {
        PyErr_SetString(PyExc_ValueError,
                        "planes: need a float32 buffer of num_boards rows of planes_stride >= 3 * N * N floats");
        return -1;
    }
    static const int steps[6][2] = {{-1, 0}, {-1, 1}, {0, -1}, {0, 1}, {1, -1}, {1, 0}};
    for (int cell = 0; cell < g->cells; cell++)
        for (int d = 0; d < 6; d++) {
            int r = cell / n + steps[d][0], c = cell % n + steps[d][1];
            g->neighbours[cell][d] = (int16_t)((0 <= r && r < n && 0 <= c && c < n) ? r * n + c : -1);
        }
    g->boards = calloc((size_t)num_boards, sizeof(Board));
    if (g->boards == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (int b = 0; b < num_boards; b++) clear_board(g, b);
    return 0;
}

static PyMethodDef HexBoards_methods[] = {
    {"reset", (PyCFunction)HexBoards_reset, METH_O,
     "reset(board): an empty board, black to play; its legal row and planes rewritten."},
    {"play", (PyCFunction)(void (*)(void))HexBoards_play, METH_FASTCALL,
     "play(board, action) -> over: a legal engine action (an empty cell) for the player to move (ValueError\n"
     "if it is not); the legal row (of the next player) and the planes updated. True when the game is over."},
    {"play_random", (PyCFunction)(void (*)(void))HexBoards_play_random, METH_FASTCALL,
     "play_random(board, action, draw) -> reply: play(board, action), then the random opponent's reply, the\n"
     "int(draw() * n)-th of the n empty cells in ascending order (draw() is called only if the game goes\n"
     "on). The reply; -1 if the game ended with the action, -2 - reply if it ended with the reply."},
    {"step_random", (PyCFunction)(void (*)(void))HexBoards_step_random, METH_FASTCALL,
     "step_random(actions, over, draws, replies, stop_at_illegal) -> events: one step of every board\n"
     "against the random opponent (each reply drawn as play_random draws it). Lists of one item per board:\n"
     "the agent's actions; whether the board is to be left alone (True); the opponents' draw() callables;\n"
     "the replies (set to the opponent's action where it replied, else left). The events, in board order:\n"
     "(board, STEP_RESIGNED or STEP_ILLEGAL), where nothing was played, and (board, STEP_ENDED), where the\n"
     "game ended with the agent's move or the reply. With stop_at_illegal the boards after the first\n"
     "illegal action are left alone."},
    {"history", (PyCFunction)HexBoards_history, METH_O, "history(board) -> the engine actions played."},
    {"winner", (PyCFunction)HexBoards_winner, METH_O,
     "winner(board) -> 0 (black) or 1 (white) once the game is over, None before."},
    {"is_over", (PyCFunction)HexBoards_is_over, METH_O, "is_over(board) -> whether the game on the board is over."},
    {"to_play", (PyCFunction)HexBoards_to_play, METH_O, "to_play(board) -> 0 (black) or 1 (white)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject HexBoardsType = {
    .ob_base = PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "palaestra.envs.board._hexboard.HexBoards",
    .tp_basicsize = sizeof(HexBoards),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "HexBoards(num_boards, board_size, legal, planes, planes_stride): B Hex boards under OpenSpiel's\n"
              "rules without the swap, each writing its legal row (the cells, resign: N*N + 1 bytes of the\n"
              "bytearray `legal`) and its black/white/empty planes (3 * N * N floats at board * planes_stride in\n"
              "the float32 buffer `planes`). All boards start empty.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)HexBoards_init,
    .tp_dealloc = (destructor)HexBoards_dealloc,
    .tp_methods = HexBoards_methods,
};

static struct PyModuleDef hexboard_module = {
    PyModuleDef_HEAD_INIT, "_hexboard", "palaestra's Hex board core (see _hexboard.c).", -1, NULL,
};

PyMODINIT_FUNC PyInit__hexboard(void) {
    if (PyType_Ready(&HexBoardsType) < 0) return NULL;
    PyObject *module = PyModule_Create(&hexboard_module);
    if (module == NULL) return NULL;
    Py_INCREF(&HexBoardsType);
    if (PyModule_AddObject(module, "HexBoards", (PyObject *)&HexBoardsType) < 0) {
        Py_DECREF(&HexBoardsType);
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
