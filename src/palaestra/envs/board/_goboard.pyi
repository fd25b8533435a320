# Type stub of the C extension _goboard.c (palaestra's Go board core).
from collections.abc import Callable
from typing import Any

ENDED_AFTER_MOVE: int
ENDED_AFTER_REPLY: int
STEP_RESIGNED: int
STEP_ILLEGAL: int
STEP_ENDED: int

class GoBoards:
    def __init__(
        self,
        num_boards: int,
        board_size: int,
        max_moves: int,
        legal: Any,
        planes: Any,
        planes_stride: int,
        env_order: bool = False,
    ) -> None: ...
    def reset(self, board: int) -> None: ...
    def play(self, board: int, action: int) -> bool: ...
    def play_random(self, board: int, action: int, draw: Callable[[], float]) -> int: ...
    def step_random(
        self,
        actions: list[int],
        over: list[bool],
        draws: list[Callable[[], float]],
        replies: list[int],
        stop_at_illegal: bool,
    ) -> list[tuple[int, int]]: ...
    def history(self, board: int) -> list[int]: ...
    def end_reason(self, board: int) -> str | None: ...
    def superko(self, board: int) -> bool: ...
    def is_over(self, board: int) -> bool: ...
    def to_play(self, board: int) -> int: ...
