"""GoEnv: the Gymnasium API, the 2017 encoding, and the rules (captures, suicide, ko, superko, passes,
komi, area scoring, the move limit)."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import palaestra.envs  # noqa: F401
from palaestra.envs.board.go import GoEnv
from palaestra.envs.board.rules import GoGame, area_score
from palaestra.errors import Error, IllegalMove, ResetNeeded


def play_out(env: GoEnv, seed: int, agent_seed: int = 0) -> tuple[list[int], list[int | None], float]:
    """A whole game by a random agent (never resigning); the agent's moves, the replies, the reward."""
    rng = np.random.default_rng(agent_seed)
    _, info = env.reset(seed=seed)
    moves, replies, reward, done = [], [], 0.0, False
    while not done:
        action = int(rng.choice(np.flatnonzero(info["action_mask"][: env.resign_action])))
        _, reward, done, truncated, info = env.step(action)
        assert not truncated
        moves.append(action)
        replies.append(info["opponent_action"])
    return moves, replies, float(reward)


def test_spaces_and_the_2017_encoding() -> None:
    env = GoEnv(opponent="random", board_size=9)
    assert env.action_space.n == 83 and env.pass_action == 81 and env.resign_action == 82
    assert env.observation_space.shape == (3, 9, 9) and env.observation_space.dtype == np.float32
    obs, info = env.reset(seed=0)
    assert obs.shape == (3, 9, 9) and obs[2].all() and not obs[:2].any()
    assert info["action_mask"].dtype == np.bool_ and info["action_mask"].all()
    # a = i*N + j with row i = 0 at the top (labelled 9) and column j = 0 labelled A.
    assert env.string_to_action("A9") == 0 and env.string_to_action("J1") == 80
    assert env.string_to_action("D4") == (9 - 4) * 9 + 3 and env.action_to_string(42) == "G5"
    assert env.action_to_string(81) == "pass" and env.string_to_action("RESIGN") == 82
    obs, *_ = env.step(env.string_to_action("C7"))
    assert obs[0, 2, 2] == 1 and obs[2, 2, 2] == 0
    with pytest.raises(Error, match="not a point"):
        env.string_to_action("I5")  # GTP has no column I


def test_check_env_random_and_mcts() -> None:
    check_env(GoEnv(opponent="random", board_size=9), skip_render_check=True)
    check_env(gymnasium.make("Go9x9-v0", opponent="mcts:5", board_size=5, render_mode="ansi").unwrapped)


def test_constructor_errors() -> None:
    with pytest.raises(Error, match="player_color"):
        GoEnv(player_color="red", opponent="random")
    with pytest.raises(Error, match="observation_type"):
        GoEnv(observation_type="numpy3c", opponent="random")
    with pytest.raises(Error, match="illegal_move_mode"):
        GoEnv(illegal_move_mode="ignore", opponent="random")
    with pytest.raises(Error, match="board_size"):
        GoEnv(board_size=1, opponent="random")
    with pytest.raises(Error, match="Unrecognized opponent"):
        GoEnv(opponent="pachi")
    with pytest.raises(ResetNeeded):
        GoEnv(opponent="random").step(0)


def test_random_opponent_is_reproducible_from_the_seed() -> None:
    env = GoEnv(opponent="random")
    first = play_out(env, seed=7)
    again = play_out(env, seed=7)
    other = play_out(env, seed=8)
    assert first == again
    assert first[1] != other[1]
    # reset() without a seed continues the seeded stream, also reproducibly
    env2 = GoEnv(opponent="random")
    env2.reset(seed=7)
    env.reset(seed=7)
    assert play_out(env, seed=None, agent_seed=1) == play_out(env2, seed=None, agent_seed=1)  # type: ignore[arg-type]


def test_mcts_opponent_is_reproducible_from_the_seed() -> None:
    def replies(seed: int) -> list[int | None]:
        env = GoEnv(opponent="mcts:20", board_size=5)
        _, info = env.reset(seed=seed)
        out = []
        for move in ("B2", "D4", "C3", "B4"):
            action = env.string_to_action(move)
            if not info["action_mask"][action]:
                action = env.pass_action
            _, _, done, _, info = env.step(action)
            out.append(info["opponent_action"])
            if done:
                break
        return out

    assert replies(3) == replies(3)


def test_capture_removes_stones(scripted) -> None:
    # Black (agent) surrounds the white stone on E5.
    env = GoEnv(opponent=scripted(GoGame(9), ["E5", "pass", "pass", "A9"]))
    env.reset(seed=0)
    for move in ("D5", "F5", "E4"):
        obs, *_ = env.step(env.string_to_action(move))
    assert obs[1, 4, 4] == 1  # the white stone on E5 (row 4 from the top)
    obs, _, done, _, info = env.step(env.string_to_action("E6"))
    assert obs[1, 4, 4] == 0 and obs[2, 4, 4] == 1 and not done
    assert info["action_mask"][env.string_to_action("E5")]  # the point is empty again


def test_suicide_is_illegal(scripted) -> None:
    # White (agent) may not play A1 inside black's A2 + B1.
    game = GoGame(9)
    env = GoEnv(player_color="white", opponent=scripted(game, ["A2", "B1", "C1"]), illegal_move_mode="raise")
    _, info = env.reset(seed=0)
    _, _, _, _, info = env.step(env.string_to_action("J9"))
    a1 = env.string_to_action("A1")
    assert not info["action_mask"][a1]
    with pytest.raises(IllegalMove, match="A1"):
        env.step(a1)
    lose = GoEnv(player_color="white", opponent=scripted(game, ["A2", "B1"]), illegal_move_mode="lose")
    lose.reset(seed=0)
    lose.step(lose.string_to_action("J9"))
    _, reward, done, truncated, info = lose.step(a1)
    assert (reward, done, truncated) == (-1.0, True, False)
    assert info["reason"] == "illegal move" and info["illegal_move"] == "A1" and info["winner"] == "black"
    assert not info["action_mask"].any()
    _, reward, done, _, _ = lose.step(0)  # a finished game stays finished
    assert (reward, done) == (0.0, True)


def test_simple_ko_forbids_the_immediate_recapture(scripted) -> None:
    # Black A2 B3 B1, white C3 D2 C1 B2; black C2 takes B2: white may not retake at B2 at once.
    white_moves = ["C3", "D2", "C1", "B2", "J9", "B2"]
    env = GoEnv(opponent=scripted(GoGame(9), white_moves))
    env.reset(seed=0)
    for move in ("A2", "B3", "B1", "pass"):
        env.step(env.string_to_action(move))
    obs, _, _, _, info = env.step(env.string_to_action("C2"))  # captures B2; white answers J9
    b2, c2 = env.string_to_action("B2"), env.string_to_action("C2")
    assert obs[1].reshape(-1)[b2] == 0 and info["opponent_action"] == env.string_to_action("J9")
    # Black plays elsewhere; now white's retake at B2 is legal (the scripted opponent plays it).
    _, _, _, _, info = env.step(env.string_to_action("J1"))
    assert info["opponent_action"] == b2
    # White's recapture took C2, and black may not retake at once either.
    assert not info["action_mask"][c2]


def test_ko_point_is_masked_for_the_agent(scripted) -> None:
    # The agent is white: after black's capture at C2, B2 is masked for white.
    env = GoEnv(player_color="white", opponent=scripted(GoGame(9), ["A2", "B3", "B1", "pass", "C2"]))
    env.reset(seed=0)
    for move in ("C3", "D2", "C1"):
        env.step(env.string_to_action(move))
    _, _, _, _, info = env.step(env.string_to_action("B2"))  # black answers C2, capturing B2
    assert info["opponent_action"] == env.string_to_action("C2")
    assert not info["action_mask"][env.string_to_action("B2")]
    assert info["action_mask"][env.pass_action] and info["action_mask"][env.resign_action]


def test_positional_superko_ends_the_game_as_a_draw(scripted) -> None:
    # On 2x2, black's last A2 recreates an earlier whole-board position: a draw (reason 'superko').
    game = GoGame(2, komi=0.5)
    env = GoEnv(opponent=scripted(game, ["B1", "A1", "B2"]), board_size=2, komi=0.5)
    env.reset(seed=0)
    reward, done, info = 0.0, False, {}
    for move in ("A2", "pass", "pass", "A2"):
        obs, reward, done, _, info = env.step(env.string_to_action(move))
        if done:
            break
    assert done and reward == 0.0 and info["reason"] == "superko" and info["winner"] is None
    # The final position was on the board before.
    observer, replay = game.make_observer(), game.new_state()
    earlier = [observer.planes(replay).tobytes()]
    for action in env.state.history()[:-1]:
        replay.apply_action(action)
        earlier.append(observer.planes(replay).tobytes())
    assert obs.tobytes() in earlier


@pytest.mark.parametrize(
    ("komi", "reward", "winner"), [(7.5, -1.0, "white"), (0.0, 0.0, None), (-3.5, 1.0, "black")]
)
def test_two_passes_end_the_game_scored_with_komi(
    scripted, komi: float, reward: float, winner: str | None
) -> None:
    env = GoEnv(opponent=scripted(GoGame(9), ["pass"]), komi=komi)
    env.reset(seed=0)
    _, got, done, _, info = env.step(env.pass_action)
    assert done and got == reward and info["winner"] == winner
    assert info["reason"] == "two passes" and info["score"] == -komi


def test_area_score_counts_stones_and_surrounded_territory(scripted) -> None:
    # Black builds a wall on column B of 5x5 while white passes: every point is black's.
    env = GoEnv(opponent=scripted(GoGame(5), ["pass"] * 6), board_size=5, komi=2.5)
    env.reset(seed=0)
    for move in ("B5", "B4", "B3", "B2", "B1"):
        _, reward, done, _, info = env.step(env.string_to_action(move))
        if done:
            break
    _, reward, done, _, info = env.step(env.pass_action)
    assert done and info["reason"] == "two passes"
    assert info["score"] == 25 - 2.5 and reward == 1.0


def reference_area_score(planes: np.ndarray, komi: float) -> float:
    """Tromp-Taylor by breadth-first search, for checking the bitboard version."""
    black, white = planes[0] > 0, planes[1] > 0
    n = black.shape[0]
    score = float(black.sum() - white.sum())
    seen: set[tuple[int, int]] = set()
    for i in range(n):
        for j in range(n):
            if black[i, j] or white[i, j] or (i, j) in seen:
                continue
            region, borders, stack = 0, set(), [(i, j)]
            seen.add((i, j))
            while stack:
                y, x = stack.pop()
                region += 1
                for v, u in ((y - 1, x), (y + 1, x), (y, x - 1), (y, x + 1)):
                    if 0 <= v < n and 0 <= u < n:
                        if black[v, u]:
                            borders.add("b")
                        elif white[v, u]:
                            borders.add("w")
                        elif (v, u) not in seen:
                            seen.add((v, u))
                            stack.append((v, u))
            score += region if borders == {"b"} else -region if borders == {"w"} else 0
    return score - komi


@pytest.mark.parametrize("size", [5, 9, 13])
def test_area_score_matches_a_reference_and_openspiel(size: int) -> None:
    rng = np.random.default_rng(size)
    game = GoGame(size, komi=6.5)
    observer = game.make_observer()
    for _ in range(20):
        state = game.new_state()
        for _ in range(int(rng.integers(0, 3 * size * size))):
            if state.is_terminal():
                break
            state.apply_action(int(rng.choice(state.legal_actions())))
        planes = observer.planes(state)
        score = area_score(planes, 6.5)
        assert score == reference_area_score(planes, 6.5)
        if state.is_terminal() and game.end_reason(state) != "superko":
            assert (score > 0) == (state.returns()[0] > 0)


def test_move_limit_ends_and_scores_the_game() -> None:
    env = GoEnv(opponent="random", max_moves=10, komi=0.5)
    _, info = env.reset(seed=1)
    steps, done = 0, False
    while not done:
        _, reward, done, _, info = env.step(int(np.flatnonzero(info["action_mask"][:81])[0]))
        steps += 1
    assert steps == 5 and info["reason"] in ("move limit", "two passes")
    assert len(env.state.history()) <= 10 and reward in (-1.0, 1.0)


def test_resignation_and_out_of_range_actions() -> None:
    env = GoEnv(opponent="random")
    env.reset(seed=0)
    _, reward, done, _, info = env.step(env.resign_action)
    assert (reward, done, info["reason"], info["winner"]) == (-1.0, True, "resignation", "white")
    env.reset(seed=0)
    for bad in (83, -1, "x", None):
        with pytest.raises(IllegalMove, match="not an action"):
            env.step(bad)


def test_opponent_resignation_pays_the_agent(scripted) -> None:
    env = GoEnv(opponent=scripted(GoGame(9), ["resign"]))
    env.reset(seed=0)
    _, reward, done, _, info = env.step(0)
    assert (reward, done, info["winner"], info["reason"]) == (1.0, True, "black", "resignation")
    assert info["opponent_action"] == env.resign_action


def test_agent_as_white_sees_blacks_first_move() -> None:
    env = GoEnv(player_color="white", opponent="random")
    obs, info = env.reset(seed=3)
    assert obs[0].sum() == 1 or info["opponent_action"] == env.pass_action
    assert info["opponent_action"] is not None


def test_legal_mask_matches_the_engine_all_game() -> None:
    env = GoEnv(opponent="random", board_size=7)
    _, info = env.reset(seed=11)
    rng = np.random.default_rng(0)
    done = False
    while not done:
        legal = {env.game.from_engine[a] for a in env.state.legal_actions()} | {env.resign_action}
        assert set(np.flatnonzero(info["action_mask"]).tolist()) == legal
        info["action_mask"][:] = True  # the agent's copy: changing it must not change the rules
        action = int(rng.choice(sorted(legal - {env.resign_action})))
        _, _, done, _, info = env.step(action)
    assert not info["action_mask"].any()


def test_changing_the_returned_mask_does_not_change_the_rules() -> None:
    env = GoEnv(opponent="random", illegal_move_mode="raise")
    _, info = env.reset(seed=0)
    _, _, _, _, info = env.step(env.string_to_action("E5"))
    info["action_mask"][:] = True
    with pytest.raises(IllegalMove, match="E5"):
        env.step(env.string_to_action("E5"))


@pytest.mark.parametrize(("size", "player_color"), [(9, "black"), (9, "white"), (5, "black")])
def test_legal_mask_and_its_check_match_the_engine(size: int, player_color: str) -> None:
    env = gymnasium.make(
        "Go9x9-v0", opponent="random", board_size=size, player_color=player_color, illegal_move_mode="raise"
    )
    game = env.unwrapped.game
    rng = np.random.default_rng(size)
    for seed in range(3):
        _, info = env.reset(seed=seed)
        done = False
        while not done:
            expected = np.zeros(game.num_actions, dtype=bool)
            expected[[game.from_engine[a] for a in env.unwrapped.state.legal_actions()]] = True
            expected[game.resign_action] = True
            assert np.array_equal(info["action_mask"], expected)
            info["action_mask"][:] = True
            illegal = np.flatnonzero(~expected)
            if illegal.size:
                with pytest.raises(IllegalMove, match="not a legal move"):
                    env.step(int(rng.choice(illegal)))
            legal = np.flatnonzero(expected[: game.resign_action])
            _, _, done, _, info = env.step(int(rng.choice(legal)))
        assert not info["action_mask"].any() and info["reason"] in ("two passes", "move limit", "superko")


@pytest.mark.parametrize("size", [2, 3, 9, 19])
def test_area_score_matches_the_reference_on_any_board(size: int) -> None:
    # Random boards, legal or not: regions along every edge, in every column.
    rng = np.random.default_rng(size)
    for _ in range(50):
        points = rng.choice(3, size=(size, size), p=[0.3, 0.3, 0.4])
        planes = np.stack([points == 0, points == 1, points == 2]).astype(np.float32)
        assert area_score(planes, 7.5) == reference_area_score(planes, 7.5)


def test_new_states_are_independent() -> None:
    game = GoGame(9)
    first = game.new_state()
    first.apply_action(40)
    second = game.new_state()
    assert second.history() == [] and second.current_player() == 0 and first.history() == [40]
