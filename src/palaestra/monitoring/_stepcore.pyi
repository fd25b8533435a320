from collections.abc import Callable
from typing import Any

class StepCounter:
    override: Callable[[Any], Any] | None
    reward: Any
    steps: int
    def __init__(self, env_step: Callable[[Any], Any], on_end: Callable[[Any, Any], Any]) -> None: ...
    def __call__(self, action: Any) -> Any: ...
