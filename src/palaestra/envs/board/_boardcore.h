/* What palaestra's two board cores (_goboard.c and _hexboard.c) share, in two headers.
 *
 * This one: the includes and the constants of both modules (colours, the largest board, the return
 * codes and events of play_random and step_random). _boardcore_methods.h: the CPython layer over B
 * boards, included by each core after its object type (see there).
 */
#ifndef PALAESTRA_BOARDCORE_H
#define PALAESTRA_BOARDCORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EMPTY 0
#define BLACK 1
#define WHITE 2
#define MAX_SIZE 25

/* Return codes of play_random(): the game ended after the agent's move; or after the reply r, as
 * ENDED_AFTER_REPLY - r. */
#define ENDED_AFTER_MOVE (-1)
#define ENDED_AFTER_REPLY (-2)
/* Events of step_random() on a board: the agent resigned, chose an illegal move, or the game ended. */
#define STEP_RESIGNED 1
#define STEP_ILLEGAL 2
#define STEP_ENDED 3

#endif /* PALAESTRA_BOARDCORE_H */
