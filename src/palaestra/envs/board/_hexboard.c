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
#include "_boardcore.h"

#define MAX_CELLS (MAX_SIZE * MAX_SIZE)

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

#define CORE_TYPE HexBoards
#define CORE_GAME "Hex"
#define CORE_REPLIES(g) ((g)->cells)
#define CORE_DOC_PLAY                                                                                    \
    "play(board, action) -> over: a legal engine action (an empty cell) for the player to move (ValueError\n" \
    "if it is not); the legal row (of the next player) and the planes updated. True when the game is over."
#define CORE_DOC_PLAY_RANDOM                                                                             \
    "play_random(board, action, draw) -> reply: play(board, action), then the random opponent's reply, the\n" \
    "int(draw() * n)-th of the n empty cells in ascending order (draw() is called only if the game goes\n"   \
    "on). The reply; -1 if the game ended with the action, -2 - reply if it ended with the reply."
#define CORE_DOC_STEP_RANDOM                                                                             \
    "step_random(actions, over, draws, replies, stop_at_illegal) -> events: one step of every board\n"      \
    "against the random opponent (each reply drawn as play_random draws it). " CORE_DOC_STEP_LISTS
#include "_boardcore_methods.h"

/* Hex cells need no translation between the engine's and the 2017 gym's numbering. */
static long engine_action(const HexBoards *g, long action) {
    (void)g;
    return action;
}

static int legal_column(const HexBoards *g, long action) {
    (void)g;
    return (int)action;
}

static int board_over(const HexBoards *g, int b) { return g->boards[b].winner != EMPTY; }

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
static PyObject *HexBoards_winner(HexBoards *g, PyObject *arg) {
    int b;
    if (!board_index(g, arg, &b)) return NULL;
    int winner = g->boards[b].winner;
    if (winner == EMPTY) Py_RETURN_NONE;
    return PyLong_FromLong(winner - 1);
}

static void HexBoards_dealloc(HexBoards *g) {
    free(g->boards);
    release_buffers(g);
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
    if (!take_buffers(g, legal, planes, stride)) return -1;
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
    CORE_METHODS,
    {"winner", (PyCFunction)HexBoards_winner, METH_O,
     "winner(board) -> 0 (black) or 1 (white) once the game is over, None before."},
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

PyMODINIT_FUNC PyInit__hexboard(void) { return create_core_module(&hexboard_module, &HexBoardsType, "HexBoards"); }
