"""Run an agent on an environment under the Monitor: what ``palaestra run`` and ``palaestra demo`` do.

::

    from palaestra.training import run_agent

    summary = run_agent("CartPole-v1", "cem", "runs/cartpole", episodes=300, seed=0, stop_when_solved=True)
    print(summary.episodes, summary.solved_at)

The loop is the one every agent is written against (:mod:`palaestra.agents.base`): ``act`` for each
observation, then ``observe`` after each step and ``end_episode`` when an episode ends, when the agent
defines them. Videos follow the Monitor's capped cubic schedule (episodes 0, 1, 8, 27, ..., 1000,
2000, ...); the environment is made with ``render_mode='rgb_array'`` (mp4) or ``'ansi'`` (terminal
recording), whichever it supports.

With ``num_envs=N`` the run is a vector env (``gymnasium.make_vec``) under one vector Monitor, and
each sub-environment has an agent of its own (seeds ``seed``, ``seed + 1``, ...), driven by the same
loop: every agent sees one stream of episodes, as in a single-env run. Videos are of sub-environment 0.
"""

from __future__ import annotations

import copy
import difflib
import inspect
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, TypeVar

import gymnasium
import numpy as np

from palaestra.errors import Error

if TYPE_CHECKING:
    from palaestra.monitoring import Monitor, VectorMonitor

__all__ = [
    "RunSummary",
    "TrainingError",
    "check_env_id",
    "make_agent",
    "make_env",
    "make_vector_env",
    "run_agent",
    "video_render_mode",
]

logger = logging.getLogger("palaestra.training")


class TrainingError(Error):
    """A run that cannot start: an unknown env id, a bad budget, an agent that does not fit the env."""


@dataclass
class RunSummary:
    """What :func:`run_agent` did."""

    env_id: str
    directory: str
    episodes: int
    steps: int
    seconds: float
    #: index of the first episode of the first window that reached the reward threshold, or None
    solved_at: int | None
    #: the best ``trials``-episode mean so far (None with fewer than ``trials`` episodes)
    best_mean: float | None
    videos: int
    #: the env's solving rule: ``trials`` consecutive episodes averaging ``reward_threshold``
    trials: int = 100
    reward_threshold: float | None = None
    interrupted: bool = False


def video_render_mode(env_id: str) -> str | None:
    """``'rgb_array'`` or ``'ansi'`` if ``env_id`` renders one of them (videos need it), else None."""
    spec = gymnasium.spec(env_id)
    modes: list[str] = []
    try:
        entry_point = spec.entry_point
        if entry_point is None:
            return None
        creator = (
            entry_point
            if callable(entry_point)
            else gymnasium.envs.registration.load_env_creator(entry_point)
        )
        modes = list(getattr(creator, "metadata", {}).get("render_modes", []))
    except Exception:  # an entry point that does not import: make_env reports it properly
        return None
    for mode in ("rgb_array", "ansi"):
        if mode in modes:
            return mode
    return None


def check_env_id(env_id: str) -> None:
    """Raise :class:`TrainingError` unless ``env_id`` is registered (ale-py's ids are registered first)."""
    try:
        gymnasium.spec(env_id)
        return
    except gymnasium.error.Error:
        pass
    from palaestra.catalogue import register_ale_py

    register_ale_py()
    try:
        gymnasium.spec(env_id)
    except gymnasium.error.Error:
        # Gymnasium's own message suggests a name without its version ("Did you mean: `CartPole`?")
        close = difflib.get_close_matches(env_id, list(gymnasium.registry), n=1, cutoff=0.75)
        suggestion = f" Did you mean {close[0]!r}?" if close else ""
        raise TrainingError(
            f"Unknown environment {env_id!r}.{suggestion} `palaestra envs` lists the ids you can run; Atari "
            "ids need the atari extra: pip install 'palaestra[atari]'."
        ) from None


def make_env(env_id: str, video: bool = True, **kwargs: Any) -> gymnasium.Env[Any, Any]:
    """``gymnasium.make(env_id)``, with a render mode that the Monitor can record when ``video``.

    An id this installation cannot run (its engine's extra is missing) is refused with the catalogue's
    one-line reason, before Gymnasium fails on the missing module.
    """
    check_env_id(env_id)
    from palaestra.catalogue import unavailable_reason

    reason = unavailable_reason(env_id)
    if reason is not None:
        raise TrainingError(f"Cannot make {env_id}: {reason}")
    if video and "render_mode" not in kwargs:
        mode = video_render_mode(env_id)
        if mode is not None:
            kwargs["render_mode"] = mode
    try:
        return gymnasium.make(env_id, **kwargs)
    except gymnasium.error.DependencyNotInstalled as exc:
        raise TrainingError(f"Cannot make {env_id}: {exc}") from None


def make_vector_env(
    env_id: str, num_envs: int, video: bool = True, vectorization_mode: str | None = None, **kwargs: Any
) -> gymnasium.vector.VectorEnv[Any, Any, Any]:
    """``gymnasium.make_vec(env_id, num_envs)`` (its own vector env where the id has one, else
    ``vectorization_mode``), with a render mode the Monitor can record when ``video``."""
    from palaestra.monitoring.recording import prepare_offscreen_rendering

    check_env_id(env_id)
    if video and "render_mode" not in kwargs:
        mode = video_render_mode(env_id)
        if mode is not None:
            kwargs["render_mode"] = mode
    if kwargs.get("render_mode") in ("rgb_array", "rgb_array_list"):
        prepare_offscreen_rendering()
    try:
        return gymnasium.make_vec(env_id, num_envs=num_envs, vectorization_mode=vectorization_mode, **kwargs)
    except gymnasium.error.DependencyNotInstalled as exc:
        raise TrainingError(f"Cannot make {env_id}: {exc}") from None


def agent_settings(agent: Any) -> dict[str, Any]:
    """An agent's settings as recorded in the provenance: its public attributes that are plain values
    (numbers, strings, booleans), which is what a built-in agent keeps its hyperparameters in."""
    plain = (bool, int, float, str, type(None))
    return {k: v for k, v in sorted(vars(agent).items()) if not k.startswith("_") and isinstance(v, plain)}


def run_config(
    agent: str | Callable[..., Any],
    built: Any,
    seed: int | None,
    episodes: int | None,
    steps: int | None,
    env_kwargs: dict[str, Any] | None,
    num_envs: int,
    vectorization_mode: str | None,
) -> dict[str, Any]:
    """What ``palaestra run`` gives the Monitor as ``config=``: the run's settings and its agent's."""
    name = agent if isinstance(agent, str) else f"{agent.__module__}:{getattr(agent, '__qualname__', agent)}"
    config: dict[str, Any] = {"agent": name, "seed": seed, "episodes": episodes, "steps": steps}
    if env_kwargs:
        config["env_kwargs"] = env_kwargs
    if num_envs > 1 or vectorization_mode is not None:
        config["num_envs"], config["vectorization_mode"] = num_envs, vectorization_mode
    try:
        config["agent_settings"] = agent_settings(built)
    except TypeError:  # an agent without __dict__ (slots)
        pass
    return config


_M = TypeVar("_M", bound="Monitor | VectorMonitor")


def _open_monitor(
    wrapper: type[_M], env: Any, directory: str | os.PathLike[str], video: bool, force: bool, resume: bool, mode: str,
    config: dict[str, Any],
) -> _M:
    """The run's Monitor or VectorMonitor, built one way for single and vector runs: videos on the
    Monitor's schedule (or none), and the run's settings as its ``config``."""
    return wrapper(
        env, directory, video_callable=None if video else False, force=force, resume=resume, mode=mode,
        config=config,
    )


def make_agent(
    agent: str | Callable[..., Any],
    env: gymnasium.Env[Any, Any] | Any,
    seed: int | None = None,
    reward_threshold: float | None = None,
) -> Any:
    """Build the agent for ``env`` from a built-in name, ``module:factory`` or a factory.

    The factory is called as ``factory(observation_space, action_space)``, with ``seed=seed`` added
    when it takes a ``seed`` argument (or ``**kwargs``), and ``reward_threshold=`` (the env's
    solving threshold) when it names a ``reward_threshold`` argument.
    """
    from palaestra.agents import load_agent_factory

    factory = load_agent_factory(agent) if isinstance(agent, str) else agent
    kwargs: dict[str, Any] = {}
    if seed is not None and _accepts(factory, "seed"):
        kwargs["seed"] = seed
    if reward_threshold is not None and _accepts(factory, "reward_threshold", explicit=True):
        kwargs["reward_threshold"] = reward_threshold
    try:
        built = factory(env.observation_space, env.action_space, **kwargs)
    except Error:
        raise
    except Exception as exc:
        raise TrainingError(
            f"The agent factory {agent!r} failed for {env.spec.id if env.spec else env}: {exc}"
        ) from exc
    if not callable(getattr(built, "act", None)):
        raise TrainingError(
            f"The agent factory {agent!r} returned {built!r}, which has no act(observation) method"
        )
    return built


def _accepts(func: Callable[..., Any], name: str, explicit: bool = False) -> bool:
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False
    if name in params:
        return True
    return not explicit and any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


class _SolveTracker:
    """Watches the training episodes' rewards for the first window that reaches the threshold.

    Incremental, but with :func:`palaestra.solved_stats.running_mean`'s arithmetic (differences of prefix
    sums added left to right, as ``np.cumsum`` does), so that "solved" here is exactly what
    ``palaestra results`` and the scoreboard will compute from the same episodes.
    """

    def __init__(self, env_id: str) -> None:
        from palaestra.catalogue import solving_criteria

        self.trials, self.threshold = solving_criteria(env_id)
        self._prefix_sums = [0.0]
        self.solved_at: int | None = None
        self.best_mean: float | None = None

    def add(self, reward: float) -> None:
        sums = self._prefix_sums
        sums.append(sums[-1] + float(reward))
        n = len(sums) - 1
        if n >= self.trials:
            mean = (sums[n] - sums[n - self.trials]) / self.trials
            self.best_mean = mean if self.best_mean is None else max(self.best_mean, mean)
            if self.solved_at is None and self.threshold is not None and mean >= self.threshold:
                self.solved_at = n - self.trials


def run_agent(
    env_id: str,
    agent: str | Callable[..., Any],
    directory: str | os.PathLike[str],
    *,
    episodes: int | None = None,
    steps: int | None = None,
    video: bool = True,
    seed: int | None = None,
    mode: str = "training",
    force: bool = False,
    resume: bool = False,
    stop_when_solved: bool = False,
    progress: bool | None = None,
    env_kwargs: dict[str, Any] | None = None,
    num_envs: int = 1,
    vectorization_mode: str | None = None,
) -> RunSummary:
    """Run ``agent`` on ``env_id`` under :class:`palaestra.Monitor`, recording into ``directory``.

    Args:
        env_id: a registered Gymnasium id (``palaestra envs`` lists them).
        agent: ``"random"``, ``"cem"``, ``"module:factory"`` or a factory callable.
        directory: the training directory.
        episodes: stop after this many episodes; ``steps``: after this many steps (give exactly one).
        video: record videos on the capped cubic schedule (when the env can render frames).
        seed: seeds the first reset, the action space and the agent (when its factory takes ``seed``).
        mode: ``"training"`` or ``"evaluation"`` (the Monitor's episode type).
        force, resume: as for the Monitor, for a directory that already holds results.
        stop_when_solved: stop as soon as the training episodes meet the env's solving rule.
        progress: show a progress bar on stderr (default: when stderr is a terminal).
        env_kwargs: extra keyword arguments for ``gymnasium.make``.
        num_envs: more than 1 runs a vector env of that many sub-environments (``gymnasium.make_vec``,
            in ``vectorization_mode``: ``"sync"``, ``"async"`` or ``"vector_entry_point"``; by default
            the id's own vector env if it has one, else sync), one agent each; ``steps`` then counts
            the steps of all of them, and both budgets are checked after each vector step (the last
            one may end a few more episodes, or take up to ``num_envs - 1`` more steps).

    A ``KeyboardInterrupt`` stops the run; the Monitor is closed either way, so the directory holds
    every finished episode, and the summary says ``interrupted``.
    """
    from palaestra.agents.base import end_episode, observe
    from palaestra.monitoring import Monitor

    if (episodes is None) == (steps is None):
        raise TrainingError("Give exactly one budget: episodes=N or steps=N")
    budget = episodes if episodes is not None else steps
    assert budget is not None
    if budget < 1:
        raise TrainingError(
            f"The budget must be at least 1 {'episode' if episodes else 'step'}, not {budget}"
        )
    if num_envs < 1:
        raise TrainingError(f"num_envs must be at least 1, not {num_envs}")
    if num_envs > 1 or vectorization_mode is not None:
        return _run_vector(
            env_id, agent, directory, episodes, steps, video, seed, mode, force, resume, stop_when_solved,
            progress, env_kwargs or {}, num_envs, vectorization_mode,
        )
    env = make_env(env_id, video=video, **(env_kwargs or {}))
    tracker = _SolveTracker(env_id)
    try:
        # The agent first: a bad agent must not leave an empty training directory behind.
        the_agent = make_agent(agent, env, seed, reward_threshold=tracker.threshold)
        config = run_config(agent, the_agent, seed, episodes, steps, env_kwargs, 1, vectorization_mode)
        monitor = _open_monitor(Monitor, env, directory, video, force, resume, mode, config)
    except BaseException:
        env.close()
        raise
    interrupted = False
    done_episodes = done_steps = 0
    start = time.monotonic()
    bar = _progress_bar(budget, "episodes" if episodes is not None else "steps", env_id, progress)
    try:
        if seed is not None:
            monitor.action_space.seed(seed)
        observation, _ = monitor.reset(seed=seed)
        while True:
            action = the_agent.act(observation)
            observation, reward, terminated, truncated, _ = monitor.step(action)
            observe(the_agent, observation, float(reward), terminated, truncated)
            done_steps += 1
            if steps is not None:
                bar.update(1)
            if terminated or truncated:
                end_episode(the_agent)
                done_episodes += 1
                if mode == "training":  # only training episodes count towards "solved"
                    tracker.add(float(monitor.get_episode_rewards()[-1]))
                bar.set_postfix_str(_reward_note(monitor.get_episode_rewards(), tracker), refresh=False)
                if episodes is not None:
                    bar.update(1)
                if stop_when_solved and tracker.solved_at is not None:
                    break
                if episodes is not None and done_episodes >= episodes:
                    break
            if steps is not None and done_steps >= steps:
                break
            if terminated or truncated:
                observation, _ = monitor.reset()
    except KeyboardInterrupt:
        interrupted = True
    finally:
        bar.close()
        monitor.close()
    return _summary(env_id, monitor, tracker, done_steps, time.monotonic() - start, interrupted)


def _summary(
    env_id: str, monitor: Monitor[Any, Any] | VectorMonitor, tracker: _SolveTracker, steps: int, seconds: float, interrupted: bool
) -> RunSummary:
    """The run's summary from its (closed) Monitor and solving tracker: one for single and vector runs."""
    return RunSummary(
        env_id=env_id,
        directory=monitor.directory,
        episodes=len(monitor.get_episode_lengths()),
        steps=steps,
        seconds=seconds,
        solved_at=tracker.solved_at,
        best_mean=tracker.best_mean,
        videos=len(monitor.videos),
        trials=tracker.trials,
        reward_threshold=tracker.threshold,
        interrupted=interrupted,
    )


def _run_vector(
    env_id: str,
    agent: str | Callable[..., Any],
    directory: str | os.PathLike[str],
    episodes: int | None,
    steps: int | None,
    video: bool,
    seed: int | None,
    mode: str,
    force: bool,
    resume: bool,
    stop_when_solved: bool,
    progress: bool | None,
    env_kwargs: dict[str, Any],
    num_envs: int,
    vectorization_mode: str | None,
) -> RunSummary:
    """:func:`run_agent` on a vector env: one agent per sub-environment, one vector Monitor."""
    from gymnasium.vector import AutoresetMode
    from gymnasium.vector.utils import concatenate, create_empty_array, iterate

    from palaestra.agents.base import end_episode, observe
    from palaestra.monitoring.vector import VectorMonitor, autoreset_mode_of

    envs = make_vector_env(env_id, num_envs, video=video, vectorization_mode=vectorization_mode, **env_kwargs)
    tracker = _SolveTracker(env_id)
    try:
        # The agents first: a bad agent must not leave an empty training directory behind.
        agents = [
            make_agent(agent, _sub_env_view(envs), None if seed is None else seed + i, tracker.threshold)
            for i in range(envs.num_envs)
        ]
        config = run_config(agent, agents[0], seed, episodes, steps, env_kwargs, num_envs, vectorization_mode)
        monitor = _open_monitor(VectorMonitor, envs, directory, video, force, resume, mode, config)
    except BaseException:
        envs.close()
        raise
    autoreset = autoreset_mode_of(envs)
    single_action_space = envs.single_action_space
    batch: Any = create_empty_array(single_action_space, envs.num_envs)
    interrupted = False
    done_episodes = done_steps = 0
    start = time.monotonic()
    bar = _progress_bar(episodes or steps or 0, "episodes" if episodes is not None else "steps", env_id, progress)
    try:
        observations, _ = monitor.reset(seed=seed)
        restarting = np.zeros(envs.num_envs, bool)  # NEXT_STEP: this step resets these sub-envs
        finished = False
        while not finished:
            actions = [a.act(o) for a, o in zip(agents, iterate(envs.observation_space, observations))]
            batch = concatenate(single_action_space, actions, batch)
            observations, rewards, terminated, truncated, infos = monitor.step(batch)
            done = np.logical_or(terminated, truncated)
            per_env = list(iterate(envs.observation_space, observations))
            for i, each in enumerate(agents):
                if restarting[i]:
                    continue
                next_observation = per_env[i]
                if done[i] and autoreset is AutoresetMode.SAME_STEP:
                    next_observation = infos["final_obs"][i]  # the env has already reset
                observe(each, next_observation, float(rewards[i]), bool(terminated[i]), bool(truncated[i]))
                done_steps += 1
                if done[i]:
                    end_episode(each)
            ended = int(done[~restarting].sum())
            done_episodes += ended
            bar.update(ended if episodes is not None else int((~restarting).sum()))
            if mode == "training":  # only training episodes count towards "solved"
                recorded = monitor.get_episode_rewards()
                for reward in recorded[len(recorded) - ended :] if ended else ():
                    tracker.add(float(reward))
            if ended:
                bar.set_postfix_str(_reward_note(monitor.get_episode_rewards(), tracker), refresh=False)
            finished = (
                (stop_when_solved and tracker.solved_at is not None)
                or (episodes is not None and done_episodes >= episodes)
                or (steps is not None and done_steps >= steps)
            )
            restarting = done if autoreset is AutoresetMode.NEXT_STEP else np.zeros_like(done)
            if autoreset is AutoresetMode.DISABLED and done.any() and not finished:
                observations, _ = monitor.reset(options={"reset_mask": done})
    except KeyboardInterrupt:
        interrupted = True
    finally:
        bar.close()
        monitor.close()
    return _summary(env_id, monitor, tracker, done_steps, time.monotonic() - start, interrupted)


def _sub_env_view(envs: gymnasium.vector.VectorEnv[Any, Any, Any]) -> Any:
    """What an agent factory is given of one sub-environment: its spaces (the action space a copy of
    its own, since agents may seed it) and the spec."""
    return SimpleNamespace(
        observation_space=envs.single_observation_space,
        action_space=copy.deepcopy(envs.single_action_space),
        spec=envs.spec,
    )


def _reward_note(rewards: list[float], tracker: _SolveTracker) -> str:
    """What the progress bar shows after each episode: the last reward and the running mean that
    decides "solved" (over the last ``trials`` episodes, or all of them while there are fewer)."""
    recent = rewards[-tracker.trials :]
    note = f"reward {rewards[-1]:.4g}, mean of last {len(recent)} {sum(recent) / len(recent):.4g}"
    if tracker.solved_at is not None:
        note += ", solved"
    elif tracker.threshold is not None:
        note += f" (solved at {tracker.threshold:g})"
    return note


def _progress_bar(total: int, unit: str, desc: str, enabled: bool | None) -> Any:
    import sys

    from tqdm import tqdm

    return tqdm(
        total=total,
        desc=desc,
        unit=unit[:-1],
        disable=None if enabled is None else not enabled,
        file=sys.stderr,
        dynamic_ncols=True,
        leave=False,
    )
