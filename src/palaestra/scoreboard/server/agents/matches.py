"""Board-game agents rated by the board: a Go or Hex agent job plays the ladder's anchors, and its
matches are stored on the ladder as the server's own.

- :func:`match_anchors`: the anchors an agent of a game plays (:data:`AGENT_ANCHORS`, those installed
  on this machine): by default 2 games each (``PALAESTRA_AGENT_MATCH_GAMES``) against ``random`` and
  GNU Go's level 0 in Go (``random`` and ``mcts:100`` in Hex), ``PALAESTRA_AGENT_MATCH_MOVE_S`` seconds
  a move;
- :func:`match_games`: how many games a job of ``env_id`` plays (its "episodes"; None: not a board game);
- :func:`agent_player_name`: the agent's name on the ladder, ``OWNER-agent-SHA8``: the owner's, by
  the first 8 hex digits of the artifact's sha256 (the same model uploaded again is the same player);
- :func:`match_plan`: the :class:`~palaestra.agents.artifact.board.MatchPlan` the sandbox plays;
- :func:`store_agent_matches`: the match folders the sandbox wrote, each replayed and checked by the
  ladder's own check (:func:`..ladders.checks.check_match`: the server trusts no record the sandbox
  wrote), stored by the ladder's own :func:`..ladders.service.store_match` as the owner's, verified,
  the agent's name claimed for the owner (the anchors' are nobody's), with the job turned ``done`` in
  the same transaction (:func:`.jobs.finish_in`), then the ladder rated again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from palaestra.ladder.anchors import agent_anchors
from palaestra.scoreboard.protocol.ladder import MatchUpload
from palaestra.scoreboard.server.accounts.auth import Principal
from palaestra.scoreboard.server.agents import jobs as agent_jobs
from palaestra.scoreboard.server.agents.jobs import Claim
from palaestra.scoreboard.server.core.config import ServerConfig
from palaestra.scoreboard.server.core.state import ServerState
from palaestra.scoreboard.server.ladders import service as ladders
from palaestra.scoreboard.server.ladders.checks import check_match
from palaestra.scoreboard.server.ladders.trust import check_player_names

__all__ = ["agent_player_name", "match_anchors", "match_games", "match_plan", "store_agent_matches"]

#: Seeds of the matches are kept small: a match seeds game n with ``seed * 100_003 + n``, which
#: OpenSpiel's MCTS takes as a C int.
SEED_MODULUS = 10_000


def match_anchors(env_id: str) -> list[str]:
    """The anchors an agent of ``env_id`` plays here (see the module docstring); [] for no board game."""
    return agent_anchors(env_id)


def match_games(config: ServerConfig, env_id: str) -> int | None:
    """The games a job of ``env_id`` plays, all anchors together; None if it is not a board game."""
    anchors = match_anchors(env_id)
    return config.agent_match_games * len(anchors) if anchors else None


def agent_player_name(owner: str, artifact_sha256: str) -> str:
    """The agent's player name on the ladder (see the module docstring)."""
    return f"{owner}-agent-{artifact_sha256[:8]}"


def match_plan(config: ServerConfig, claim: Claim, owner: str) -> Any:
    """The sandbox's :class:`~palaestra.agents.artifact.board.MatchPlan` for ``claim`` (the ``agents``
    extra is imported when a job runs)."""
    from palaestra.agents.artifact.board import MatchPlan

    anchors = tuple(match_anchors(claim.env_id))
    seeds = tuple(int(claim.seeds[i % len(claim.seeds)]) % SEED_MODULUS for i in range(len(anchors)))
    return MatchPlan(
        player=agent_player_name(owner, claim.artifact_sha256),
        opponents=anchors,
        games=config.agent_match_games,
        seeds=seeds,
        move_time=float(config.agent_match_move_s),
    )


def store_agent_matches(
    state: ServerState, claim: Claim, principal: Principal, directory: Path, points: list[float]
) -> list[str]:
    """Check and store the match folders under ``directory`` as the job's verified matches (see the
    module docstring); their ids. A game the ladder's check refuses raises its
    :class:`~palaestra.scoreboard.server.problems.Problem` and nothing is stored."""
    folders = sorted(p for p in directory.iterdir() if p.is_dir())
    checked = [check_match(MatchUpload.from_folder(folder)) for folder in folders]
    if not checked:
        raise ValueError(f"the sandbox wrote no match folder in {directory}")
    ladder_ids: set[str] = set()
    match_ids = []
    with state.db.write() as session:
        agent = agent_player_name(principal.user_name, claim.artifact_sha256)
        check_player_names(session, principal, [agent])  # the agent's name is its owner's (or nobody's yet)
        for match in checked:
            if agent not in match.players:
                raise ValueError(f"the match {match.players} does not name the agent {agent!r}")
            match_id, _ = ladders.store_match(session, principal, match, agent_job_id=claim.id)
            match_ids.append(match_id)
            ladder_ids.add(match.ladder)
        agent_jobs.finish_in(session, claim, None, points, state.clock.now())
    for ladder in sorted(ladder_ids):
        ladders.rerate_ladder(state.db, ladder)
    return match_ids
