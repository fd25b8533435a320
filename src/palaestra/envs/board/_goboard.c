/* palaestra's Go board core: B boards under OpenSpiel's Go rules, kept in step move by move.
 *
 * What palaestra's Go envs need on every move against the random opponent, without asking OpenSpiel:
 * the legal moves of the player to move (written into a row of a caller's bytearray), the
 * black/white/empty planes (written into a caller's float32 buffer, in OpenSpiel's cell order, row 0
 * at the bottom, or the 2017 gym's, row 0 at the top), whether and why the game is over, the moves
 * played, and the random opponent's replies. OpenSpiel stays the reference: the envs rebuild a
 * board's OpenSpiel state from the moves when it is read, play every other opponent on it, and fall
 * back to it where this extension is not built; tests/envs/test_go_core.py plays both side by side
 * and compares every move (see vector.py and env.py).
 *
 * The rules are OpenSpiel's (open_spiel/games/go), reimplemented here:
 *   - a move is legal on an empty point that is not the ko point and is not suicide: the stone has
 *     an empty neighbour, or joins a chain of its colour that keeps another liberty, or captures a
 *     chain of the other colour that had this point as its only liberty; pass is always legal;
 *   - the ko point: after a stone played where all its neighbours were the other colour's stones or
 *     the edge captured exactly one stone, that stone's point is illegal for the next move only;
 *   - the game is over after two passes in a row, after max_moves moves, or when a move other than a
 *     pass repeats a whole-board position seen before in the game (positional superko: the board's
 *     stones only, the empty board included);
 *   - the engine numbers points row * N + column from the bottom row, pass N * N.
 *
 * Each board: a padded (N+2) x (N+2) array of colours with a guard border, chains as circular
 * linked lists of stones with a head per stone and a size per head (the smaller chain is relabelled
 * when two join), a Zobrist hash of the stones and an open-addressing set of the hashes seen.
 * Each point also counts its empty neighbours, and each chain its pseudo-liberties (see Board), which
 * tell in constant time whether it has no liberty or exactly one. Legality is recomputed for the whole
 * board after each move: a point with an empty neighbour is legal (unless it is the ko point), and a
 * point surrounded by stones looks at the chains around it.
 */
#include "_boardcore.h"

#define GUARD 3
#define MAX_SIDE (MAX_SIZE + 2)
#define MAX_POINTS (MAX_SIDE * MAX_SIDE)

static uint64_t zobrist[MAX_POINTS][2];

typedef struct {
    uint64_t *keys; /* 0 marks a free slot; the hash 0 (the empty board) is kept in has_zero */
    size_t capacity; /* a power of two */
    size_t count;
    int has_zero;
} PositionSet;

typedef struct {
    /* per padded point, (N+2)^2 of each, in one allocation per board (points: the memory block) */
    void *points;
    uint8_t *color;
    int16_t *head;
    int16_t *next;
    int16_t *size;         /* stones of the chain, valid at its head */
    uint8_t *empty_around; /* empty neighbours of each point (on the board) */
    /* A chain's pseudo-liberties (valid at its head): its (stone, empty neighbour) pairs, with the sum
     * and the sum of squares of those empty points. It has no liberty when there are none, and exactly
     * one when all of them are the same point: count * sum of squares == sum * sum. */
    int16_t *pseudo;
    int32_t *pseudo_sum;
    int64_t *pseudo_squares;
    int ko;                   /* padded point that is illegal for the next move, or -1 */
    int to_play;
    int moves;
    int last_was_pass;
    int superko;
    int16_t *history; /* the engine actions played, `moves` of them */
    int history_capacity;
    int over;
    uint64_t hash;
    PositionSet seen;
} Board;

typedef struct {
    PyObject_HEAD
    int num_boards;
    int n;
    int cells;
    int side;
    int width; /* of a legal row: the points, pass, resign */
    int max_moves;
    Py_ssize_t stride; /* floats per board in the planes buffer */
    Board *boards;
    Py_buffer legal;
    Py_buffer planes;
    int has_legal;
    int has_planes;
    int16_t point_of[MAX_SIZE * MAX_SIZE]; /* engine action -> padded point */
    int16_t cell_of[MAX_POINTS];           /* padded point -> its cell in the planes and the legal row */
    int16_t column_of[MAX_SIZE * MAX_SIZE + 2]; /* engine action -> its column in the legal row */
    int16_t neighbours[MAX_POINTS][4];
} GoBoards;

#define CORE_TYPE GoBoards
#define CORE_GAME "Go"
#define CORE_REPLIES(g) ((g)->cells + 1) /* the points and pass */
#define CORE_DOC_PLAY                                                                                       \
    "play(board, action) -> over: a legal engine action for the player to move (ValueError if it is not);\n" \
    "the legal row (of the next player) and the planes updated. True when the game is over."
#define CORE_DOC_PLAY_RANDOM                                                                                \
    "play_random(board, action, draw) -> reply: play(board, action), then the random opponent's reply, the\n" \
    "int(draw() * n)-th of the n legal engine actions in engine order (draw() is called only if the game\n"  \
    "goes on). The reply; -1 if the game ended with the action, -2 - reply if it ended with the reply."
#define CORE_DOC_STEP_RANDOM                                                                                \
    "step_random(actions, over, draws, replies, stop_at_illegal) -> events: one step of every board\n"         \
    "against the random opponent, in 2017 gym actions (rows flipped from the engine's). " CORE_DOC_STEP_LISTS
#include "_boardcore_methods.h"

/* -- the set of positions seen ---------------------------------------------------------------- */
static int positions_init(PositionSet *set) {
    set->capacity = 256;
    set->keys = calloc(set->capacity, sizeof(uint64_t));
    set->count = 0;
    set->has_zero = 0;
    return set->keys != NULL;
}

static void positions_clear(PositionSet *set) {
    memset(set->keys, 0, set->capacity * sizeof(uint64_t));
    set->count = 0;
    set->has_zero = 0;
}

static void positions_put(uint64_t *keys, size_t capacity, uint64_t key) {
    size_t i = (size_t)(key ^ (key >> 29)) & (capacity - 1);
    while (keys[i] != 0) i = (i + 1) & (capacity - 1);
    keys[i] = key;
}

/* Adds key; 1 if it was new, 0 if seen before, -1 when out of memory. */
static int positions_add(PositionSet *set, uint64_t key) {
    if (key == 0) {
        int added = !set->has_zero;
        set->has_zero = 1;
        return added;
    }
    size_t mask = set->capacity - 1;
    size_t i = (size_t)(key ^ (key >> 29)) & mask;
    while (set->keys[i] != 0) {
        if (set->keys[i] == key) return 0;
        i = (i + 1) & mask;
    }
    if (2 * (set->count + 1) > set->capacity) {
        size_t capacity = 2 * set->capacity;
        uint64_t *keys = calloc(capacity, sizeof(uint64_t));
        if (keys == NULL) return -1;
        for (size_t j = 0; j < set->capacity; j++)
            if (set->keys[j] != 0) positions_put(keys, capacity, set->keys[j]);
        free(set->keys);
        set->keys = keys;
        set->capacity = capacity;
    }
    positions_put(set->keys, set->capacity, key);
    set->count++;
    return 1;
}

/* -- stones and chains ------------------------------------------------------------------------- */
/* The engine action of a 2017 gym Go action (row 0 at the top), and back: the rows are flipped;
 * pass (N*N) and resign (N*N + 1, the legal row's last column) are the same. */
static inline long flip_rows(const GoBoards *g, long action) {
    if (action >= g->cells) return action;
    return (g->n - 1 - action / g->n) * g->n + action % g->n;
}

static long engine_action(const GoBoards *g, long action) { return flip_rows(g, action); }

static int legal_column(const GoBoards *g, long action) { return g->column_of[action]; }

static int board_over(const GoBoards *g, int b) { return g->boards[b].over; }

static void set_stone(GoBoards *g, int b, int p, int color) {
    Board *board = &g->boards[b];
    float *planes = planes_of(g, b);
    int a = g->cell_of[p];
    board->color[p] = (uint8_t)color;
    board->hash ^= zobrist[p][color - 1];
    for (int d = 0; d < 4; d++) board->empty_around[g->neighbours[p][d]]--;
    planes[(color - 1) * g->cells + a] = 1.0f;
    planes[2 * g->cells + a] = 0.0f;
}

static void clear_stone(GoBoards *g, int b, int p) {
    Board *board = &g->boards[b];
    float *planes = planes_of(g, b);
    int a = g->cell_of[p];
    int color = board->color[p];
    board->color[p] = EMPTY;
    board->hash ^= zobrist[p][color - 1];
    for (int d = 0; d < 4; d++) board->empty_around[g->neighbours[p][d]]++;
    planes[(color - 1) * g->cells + a] = 0.0f;
    planes[2 * g->cells + a] = 1.0f;
}

static inline void add_liberty(Board *board, int head, int point) {
    board->pseudo[head]++;
    board->pseudo_sum[head] += point;
    board->pseudo_squares[head] += (int64_t)point * point;
}

static inline void remove_liberty(Board *board, int head, int point) {
    board->pseudo[head]--;
    board->pseudo_sum[head] -= point;
    board->pseudo_squares[head] -= (int64_t)point * point;
}

/* Whether the chain with this head has exactly one liberty (it has at least one). */
static inline int in_atari(const Board *board, int head) {
    int64_t sum = board->pseudo_sum[head];
    return board->pseudo[head] * board->pseudo_squares[head] == sum * sum;
}

static inline int is_stone(int color) { return color == BLACK || color == WHITE; }

/* Joins the chains with heads a and b; the head of the joined chain. */
static int join_chains(Board *board, int a, int b) {
    if (board->size[a] < board->size[b]) {
        int t = a;
        a = b;
        b = t;
    }
    int p = b;
    do {
        board->head[p] = (int16_t)a;
        p = board->next[p];
    } while (p != b);
    int16_t t = board->next[a];
    board->next[a] = board->next[b];
    board->next[b] = t;
    board->size[a] = (int16_t)(board->size[a] + board->size[b]);
    board->pseudo[a] = (int16_t)(board->pseudo[a] + board->pseudo[b]);
    board->pseudo_sum[a] += board->pseudo_sum[b];
    board->pseudo_squares[a] += board->pseudo_squares[b];
    return a;
}

/* Takes the chain with this head off the board; the stones it had. Each emptied point becomes a
 * liberty of the other chains around it. */
static int remove_chain(GoBoards *g, int b, int head) {
    Board *board = &g->boards[b];
    int removed = 0;
    int p = head;
    do {
        int next = board->next[p];
        clear_stone(g, b, p);
        board->head[p] = (int16_t)p;
        board->next[p] = (int16_t)p;
        board->size[p] = 0;
        const int16_t *around = g->neighbours[p];
        for (int d = 0; d < 4; d++) {
            int q = around[d];
            /* stones of this chain still there keep its head; those removed are empty */
            if (is_stone(board->color[q]) && board->head[q] != head) add_liberty(board, board->head[q], p);
        }
        removed++;
        p = next;
    } while (p != head);
    return removed;
}

/* A stone of the player to move at padded point p (a legal move): joins, captures, sets the ko point. */
static void place_stone(GoBoards *g, int b, int p) {
    Board *board = &g->boards[b];
    int color = board->to_play;
    int other = 3 - color;
    const int16_t *around = g->neighbours[p];
    int in_enemy_eye = 1;
    for (int d = 0; d < 4; d++) {
        int c = board->color[around[d]];
        if (c == color || c == EMPTY) in_enemy_eye = 0;
    }
    set_stone(g, b, p, color);
    for (int d = 0; d < 4; d++) {
        int q = around[d];
        if (is_stone(board->color[q])) remove_liberty(board, board->head[q], p);
    }
    board->head[p] = (int16_t)p;
    board->next[p] = (int16_t)p;
    board->size[p] = 1;
    board->pseudo[p] = 0;
    board->pseudo_sum[p] = 0;
    board->pseudo_squares[p] = 0;
    for (int d = 0; d < 4; d++)
        if (board->color[around[d]] == EMPTY) add_liberty(board, p, around[d]);
    int head = p;
    for (int d = 0; d < 4; d++) {
        int q = around[d];
        if (board->color[q] == color && board->head[q] != head) head = join_chains(board, head, board->head[q]);
    }
    int captured = 0;
    int first_captured = -1;
    for (int d = 0; d < 4; d++) {
        int q = around[d];
        /* a chain touching p twice is gone (EMPTY) by its second look */
        if (board->color[q] == other && board->pseudo[board->head[q]] == 0) {
            if (first_captured < 0) first_captured = q;
            captured += remove_chain(g, b, board->head[q]);
        }
    }
    board->ko = (in_enemy_eye && captured == 1) ? first_captured : -1;
}

/* Whether the player to move may play on the empty point p, all of whose neighbours are stones or
 * the edge: if it joins a chain of its colour that has another liberty, or takes the last liberty of
 * a chain of the other colour (p is a liberty of every chain around it). */
static int surrounded_point_is_legal(const GoBoards *g, const Board *board, int p) {
    const int16_t *around = g->neighbours[p];
    int mine = board->to_play;
    for (int d = 0; d < 4; d++) {
        int c = board->color[around[d]];
        if (!is_stone(c)) continue;
        int atari = in_atari(board, board->head[around[d]]);
        if (c == mine ? !atari : atari) return 1;
    }
    return 0;
}

/* Writes board b's legal row for the player to move; the number of legal engine actions (pass
 * included), 0 once the game is over (the row is then all 0, resign too). A point with an empty
 * neighbour is legal unless it is the ko point; only the others need their chains' liberties. */
static int write_legal_row(GoBoards *g, int b) {
    Board *board = &g->boards[b];
    uint8_t *row = row_of(g, b);
    if (board->over) {
        memset(row, 0, (size_t)g->width);
        return 0;
    }
    const uint8_t *color = board->color;
    const uint8_t *empty_around = board->empty_around;
    int legal_count = 0;
    for (int a = 0; a < g->cells; a++) {
        int p = g->point_of[a];
        int legal = color[p] == EMPTY && (empty_around[p] || surrounded_point_is_legal(g, board, p));
        row[g->cell_of[p]] = (uint8_t)legal;
        legal_count += legal;
    }
    if (board->ko >= 0 && row[g->cell_of[board->ko]]) {
        row[g->cell_of[board->ko]] = 0;
        legal_count--;
    }
    row[g->cells] = 1;     /* pass */
    row[g->cells + 1] = 1; /* resign */
    return legal_count + 1;
}

static void clear_board(GoBoards *g, int b) {
    Board *board = &g->boards[b];
    memset(board->color, GUARD, (size_t)(g->side * g->side));
    for (int a = 0; a < g->cells; a++) {
        int p = g->point_of[a];
        board->color[p] = EMPTY;
        board->head[p] = (int16_t)p;
        board->next[p] = (int16_t)p;
        board->size[p] = 0;
    }
    for (int a = 0; a < g->cells; a++) {
        int p = g->point_of[a];
        int count = 0;
        for (int d = 0; d < 4; d++) count += board->color[g->neighbours[p][d]] == EMPTY;
        board->empty_around[p] = (uint8_t)count;
    }
    board->ko = -1;
    board->to_play = BLACK;
    board->moves = 0;
    board->last_was_pass = 0;
    board->superko = 0;
    board->over = 0;
    board->hash = 0;
    positions_clear(&board->seen);
    positions_add(&board->seen, 0);
    float *planes = planes_of(g, b);
    for (int i = 0; i < 2 * g->cells; i++) planes[i] = 0.0f;
    for (int i = 2 * g->cells; i < 3 * g->cells; i++) planes[i] = 1.0f;
    write_legal_row(g, b);
}

/* Plays engine action `action` for the player to move on board b; the legal count of the next
 * position as write_legal_row() gives it, or -1 with a Python error set. */
static int play(GoBoards *g, int b, long action) {
    Board *board = &g->boards[b];
    if (board->over) {
        PyErr_Format(PyExc_ValueError, "board %d: the game is over", b);
        return -1;
    }
    if (action < 0 || action > g->cells || !row_of(g, b)[g->column_of[action]]) {
        PyErr_Format(PyExc_ValueError, "board %d: %ld is not a legal engine action for the player to move", b,
                     action);
        return -1;
    }
    int is_pass = action == g->cells;
    if (is_pass)
        board->ko = -1;
    else
        place_stone(g, b, g->point_of[action]);
    board->to_play = 3 - board->to_play;
    if (board->moves == board->history_capacity) {
        int capacity = board->history_capacity ? 2 * board->history_capacity : 256;
        int16_t *history = realloc(board->history, (size_t)capacity * sizeof(int16_t));
        if (history == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        board->history = history;
        board->history_capacity = capacity;
    }
    board->history[board->moves++] = (int16_t)action;
    int added = positions_add(&board->seen, board->hash);
    if (added < 0) {
        PyErr_NoMemory();
        return -1;
    }
    board->superko = !added && !is_pass;
    board->over = board->moves >= 2 &&
                  (board->moves >= g->max_moves || board->superko || (is_pass && board->last_was_pass));
    board->last_was_pass = is_pass;
    return write_legal_row(g, b);
}

/* -- the Python type ----------------------------------------------------------------------------- */
static PyObject *GoBoards_end_reason(GoBoards *g, PyObject *arg) {
    int b;
    if (!board_index(g, arg, &b)) return NULL;
    const Board *board = &g->boards[b];
    if (!board->over) Py_RETURN_NONE;
    const int16_t *h = board->history;
    int n = board->moves;
    /* in the order of GoGame.end_reason() */
    if (n >= 2 && h[n - 1] == g->cells && h[n - 2] == g->cells) return PyUnicode_FromString("two passes");
    if (n >= g->max_moves) return PyUnicode_FromString("move limit");
    return PyUnicode_FromString("superko");
}

static PyObject *GoBoards_superko(GoBoards *g, PyObject *arg) {
    int b;
    if (!board_index(g, arg, &b)) return NULL;
    return PyBool_FromLong(g->boards[b].over && g->boards[b].superko);
}

/* Lays out a board's per-point arrays in one block, the widest first (each stays aligned). */
static int board_memory(Board *board, int points) {
    size_t n = (size_t)points;
    char *block = calloc(n, sizeof(int64_t) + sizeof(int32_t) + 4 * sizeof(int16_t) + 2 * sizeof(uint8_t));
    if (block == NULL) return 0;
    board->points = block;
    board->pseudo_squares = (int64_t *)block;
    block += n * sizeof(int64_t);
    board->pseudo_sum = (int32_t *)block;
    block += n * sizeof(int32_t);
    board->head = (int16_t *)block;
    block += n * sizeof(int16_t);
    board->next = (int16_t *)block;
    block += n * sizeof(int16_t);
    board->size = (int16_t *)block;
    block += n * sizeof(int16_t);
    board->pseudo = (int16_t *)block;
    block += n * sizeof(int16_t);
    board->color = (uint8_t *)block;
    block += n;
    board->empty_around = (uint8_t *)block;
    return 1;
}

static void GoBoards_dealloc(GoBoards *g) {
    if (g->boards != NULL) {
        for (int b = 0; b < g->num_boards; b++) {
            free(g->boards[b].seen.keys);
            free(g->boards[b].history);
            free(g->boards[b].points);
        }
        free(g->boards);
    }
    release_buffers(g);
    Py_TYPE(g)->tp_free((PyObject *)g);
}

static int GoBoards_init(GoBoards *g, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"num_boards", "board_size", "max_moves", "legal", "planes", "planes_stride",
                               "env_order", NULL};
    int num_boards, n, max_moves, env_order = 0;
    Py_ssize_t stride;
    PyObject *legal, *planes;
    if (g->boards != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "GoBoards is initialised once");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "iiiOOn|p", keywords, &num_boards, &n, &max_moves, &legal,
                                     &planes, &stride, &env_order))
        return -1;
    if (num_boards < 1 || n < 2 || n > MAX_SIZE || max_moves < 2) {
        PyErr_Format(PyExc_ValueError, "GoBoards: need num_boards >= 1, board_size 2..%d, max_moves >= 2", MAX_SIZE);
        return -1;
    }
    g->num_boards = num_boards;
    g->n = n;
    g->cells = n * n;
    g->side = n + 2;
    g->width = g->cells + 2;
    g->max_moves = max_moves;
    g->column_of[g->cells] = (int16_t)g->cells;         /* pass */
    g->column_of[g->cells + 1] = (int16_t)(g->cells + 1); /* resign */
    if (!take_buffers(g, legal, planes, stride)) return -1;
    for (int p = 0; p < MAX_POINTS; p++) g->cell_of[p] = -1;
    for (int a = 0; a < g->cells; a++) {
        int p = (a / n + 1) * g->side + a % n + 1;
        g->point_of[a] = (int16_t)p;
        g->cell_of[p] = (int16_t)(env_order ? flip_rows(g, a) : a);
        g->column_of[a] = g->cell_of[p];
        g->neighbours[p][0] = (int16_t)(p + g->side);
        g->neighbours[p][1] = (int16_t)(p + 1);
        g->neighbours[p][2] = (int16_t)(p - 1);
        g->neighbours[p][3] = (int16_t)(p - g->side);
    }
    g->boards = calloc((size_t)num_boards, sizeof(Board));
    if (g->boards == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (int b = 0; b < num_boards; b++) {
        if (!positions_init(&g->boards[b].seen) || !board_memory(&g->boards[b], g->side * g->side)) {
            PyErr_NoMemory();
            return -1;
        }
        clear_board(g, b);
    }
    return 0;
}

static PyMethodDef GoBoards_methods[] = {
    CORE_METHODS,
    {"end_reason", (PyCFunction)GoBoards_end_reason, METH_O,
     "end_reason(board) -> 'two passes', 'move limit', 'superko' (as GoGame.end_reason), None before the end."},
    {"superko", (PyCFunction)GoBoards_superko, METH_O,
     "superko(board) -> whether the game ended by repeating a position (which OpenSpiel scores as a draw, even\n"
     "when its last move also reached the move limit)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject GoBoardsType = {
    .ob_base = PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "palaestra.envs.board._goboard.GoBoards",
    .tp_basicsize = sizeof(GoBoards),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "GoBoards(num_boards, board_size, max_moves, legal, planes, planes_stride, env_order=False): B Go\n"
              "boards under OpenSpiel's rules, each writing its legal row (the points, pass, resign: N*N + 2 bytes\n"
              "of the bytearray `legal`) and its black/white/empty planes (3 * N * N floats at board *\n"
              "planes_stride in the float32 buffer `planes`), the points in the engine's order (row 0 at the\n"
              "bottom) or with env_order in the 2017 gym's (row 0 at the top). All boards start empty.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)GoBoards_init,
    .tp_dealloc = (destructor)GoBoards_dealloc,
    .tp_methods = GoBoards_methods,
};

static struct PyModuleDef goboard_module = {
    PyModuleDef_HEAD_INIT, "_goboard", "palaestra's Go board core (see _goboard.c).", -1, NULL,
};

PyMODINIT_FUNC PyInit__goboard(void) {
    /* Zobrist keys from splitmix64 with a fixed seed: any distinct random keys do */
    uint64_t x = 0x70616c6165737472ULL;
    for (int p = 0; p < MAX_POINTS; p++)
        for (int c = 0; c < 2; c++) {
            uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
            zobrist[p][c] = z ^ (z >> 31);
        }
    return create_core_module(&goboard_module, &GoBoardsType, "GoBoards");
}
