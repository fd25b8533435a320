"""HexEnv: the Gymnasium API, the 2017 encoding and geometry, wins for both colours, the swap rule."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import palaestra.envs  # noqa: F401
from palaestra.envs.board.hex import HexEnv
from palaestra.envs.board.rules import HexGame
from palaestra.errors import Error, IllegalMove


def test_spaces_and_encoding() -> None:
    env = HexEnv(board_size=9)
    assert env.action_space.n == 82 and env.resign_action == 81
    assert env.observation_space.shape == (3, 9, 9)
    obs, info = env.reset(seed=0)
    assert obs[2].all() and info["action_mask"].all() and info["action_mask"].shape == (82,)
    obs, *_ = env.step(3 * 9 + 4)  # (row 3, column 4)
    assert obs[0, 3, 4] == 1 and obs[2, 3, 4] == 0 and obs[1].sum() == 1
    assert env.action_to_string(3 * 9 + 4) == "e4" and env.string_to_action("e4") == 31
    swap = HexEnv(board_size=9, swap=True)
    assert swap.action_space.n == 83 and swap.action_to_string(82) == "swap"


def test_check_env() -> None:
    check_env(gymnasium.make("Hex9x9-v0", render_mode="rgb_array").unwrapped)
    check_env(
        HexEnv(board_size=5, opponent="mcts:10", player_color="white", swap=True), skip_render_check=True
    )


def test_observation_type_and_errors() -> None:
    with pytest.raises(Error, match="numpy3c"):
        HexEnv(observation_type="image3c")
    with pytest.raises(Error, match="plays Go only"):
        HexEnv(opponent="gnugo")
    with pytest.raises(Error, match="Unrecognized opponent"):
        HexEnv(opponent="mcts:lots")


def test_black_wins_by_joining_top_and_bottom(scripted) -> None:
    # Black goes down column a; white plays on the right edge, which joins nothing.
    n = 5
    env = HexEnv(board_size=n, opponent=scripted(HexGame(n), [f"e{r}" for r in range(1, n + 1)]))
    env.reset(seed=0)
    for row in range(n):
        _, reward, done, _, info = env.step(row * n)
        assert done == (row == n - 1)
    assert reward == 1.0 and info["winner"] == "black" and info["reason"] == "connection"


def test_white_wins_by_joining_left_and_right(scripted) -> None:
    n = 5
    env = HexEnv(
        board_size=n, player_color="white", opponent=scripted(HexGame(n), [f"{c}5" for c in "abcde"])
    )
    env.reset(seed=0)
    for column in range(n):
        _, reward, done, _, info = env.step(column)  # row 0, left to right
        assert done == (column == n - 1)
    assert reward == 1.0 and info["winner"] == "white"


def test_black_loses_when_white_connects(scripted) -> None:
    n = 3
    env = HexEnv(board_size=n, opponent=scripted(HexGame(n), ["a2", "b2", "c2"]))
    env.reset(seed=0)
    rewards = []
    for action in (0, 1, 2):  # black fills row 1, joining left and right: not black's goal
        _, reward, done, _, info = env.step(action)
        rewards.append(reward)
        if done:
            break
    assert done and rewards[-1] == -1.0 and info["winner"] == "white"


def test_the_2017_neighbourhood(scripted) -> None:
    # (r-1, c+1) and (r+1, c-1) touch: the anti-diagonal c3-b2-a1... joins top and bottom for black;
    # the main diagonal does not.
    n = 3
    diagonal = HexEnv(board_size=n, opponent=scripted(HexGame(n), ["a3", "b3", "c1"]))
    diagonal.reset(seed=0)
    for action in (0, 4):  # (0,0), (1,1)
        _, _, done, _, _ = diagonal.step(action)
        assert not done
    _, _, done, _, _ = diagonal.step(8)  # (2,2): not a chain
    assert not done
    anti = HexEnv(board_size=n, opponent=scripted(HexGame(n), ["a1", "c3"]))
    anti.reset(seed=0)
    for action, finished in ((2, False), (4, False), (6, True)):  # (0,2), (1,1), (2,0)
        _, reward, done, _, _ = anti.step(action)
        assert done == finished
    assert reward == 1.0


def test_swap_mirrors_blacks_stone_and_black_moves_again(scripted) -> None:
    n = 5
    game = HexGame(n, swap=True)
    env = HexEnv(board_size=n, swap=True, player_color="white", opponent=scripted(game, ["b1", "c3"]))
    obs, info = env.reset(seed=0)
    assert obs[0, 0, 1] == 1 and info["action_mask"][game.swap_action]
    obs, _, done, _, info = env.step(game.swap_action)
    # Black's stone at (0, 1) is now white's, at (1, 0); black then played c3 = (2, 2).
    assert obs[1, 1, 0] == 1 and obs[0, 0, 1] == 0 and obs[0, 2, 2] == 1 and not done
    assert not info["action_mask"][game.swap_action]  # only as the second move


def test_swap_is_illegal_later_and_without_the_rule() -> None:
    env = HexEnv(board_size=5, opponent="random", illegal_move_mode="raise")
    env.reset(seed=0)
    with pytest.raises(IllegalMove):
        env.step(26)  # there is no action 26 on 5x5 without swap
    swap = HexEnv(board_size=5, swap=True, opponent="random", illegal_move_mode="raise")
    swap.reset(seed=0)
    with pytest.raises(IllegalMove, match="swap"):
        swap.step(26)  # black's first move cannot be a swap


def test_random_and_mcts_are_reproducible() -> None:
    def replies(opponent: str, seed: int) -> list[int | None]:
        env = HexEnv(board_size=5, opponent=opponent)
        _, info = env.reset(seed=seed)
        out = []
        for _ in range(4):
            action = int(np.flatnonzero(info["action_mask"][:25])[0])
            _, _, done, _, info = env.step(action)
            out.append(info["opponent_action"])
            if done:
                break
        return out

    assert replies("random", 1) == replies("random", 1)
    assert replies("mcts:30", 1) == replies("mcts:30", 1)
    assert any(replies("random", 1) != replies("random", seed) for seed in (2, 3, 4))


def test_one_argument_callable_as_in_2017() -> None:
    def first_empty(observation: np.ndarray) -> int:
        return int(np.flatnonzero(observation[2].reshape(-1))[0])

    env = HexEnv(board_size=5, opponent=first_empty)
    _, info = env.reset(seed=0)
    _, _, _, _, info = env.step(12)
    assert info["opponent_action"] == 0


def test_an_illegal_callable_reply_is_an_error() -> None:
    env = HexEnv(board_size=5, opponent=lambda observation, mask: 0)
    env.reset(seed=0)
    with pytest.raises(IllegalMove, match="not a legal move"):
        env.step(0)  # the policy answers 0, which black just took


def test_mcts_beats_random_mostly() -> None:
    wins = 0
    env = HexEnv(board_size=5, player_color="white", opponent="random")
    from palaestra.envs.board.opponents import MCTSOpponent

    for seed in range(4):
        bot = MCTSOpponent(200)
        bot.bind(env.game, 1)
        bot.reset(seed)
        env.reset(seed=seed)
        done = False
        while not done:
            action = env.game.from_engine[bot.act(env.state)]
            _, reward, done, _, _ = env.step(action)
        wins += reward == 1.0
    assert wins >= 3


def engine_mask(env: HexEnv) -> np.ndarray:
    """The legal actions as OpenSpiel lists them, in env actions, resign included."""
    mask = np.zeros(env.action_space.n, dtype=bool)
    mask[[env.game.from_engine[a] for a in env.state.legal_actions()]] = True
    mask[env.resign_action] = True
    return mask


@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("player_color", ["black", "white"])
@pytest.mark.parametrize("opponent", ["random", "callable"])
def test_legal_mask_and_its_check_match_the_engine(swap: bool, player_color: str, opponent: str) -> None:
    # Without the swap the env reads the mask off the observation's empty plane (after a random
    # opponent's reply inside step(), or a callable's through the general path); with it, from the
    # engine's legal mask. Every way must agree with OpenSpiel, and so must the legality check.
    rng = np.random.default_rng(0)

    def policy(observation: np.ndarray, mask: np.ndarray) -> int:
        legal = np.flatnonzero(mask)
        return int(rng.choice(legal[legal != 25]))  # anything but resign

    env = HexEnv(
        board_size=5,
        swap=swap,
        player_color=player_color,
        opponent=policy if opponent == "callable" else "random",
        illegal_move_mode="raise",
    )
    for seed in range(6):
        _, info = env.reset(seed=seed)
        done = False
        while not done:
            expected = engine_mask(env)
            assert info["action_mask"].dtype == np.bool_ and info["action_mask"].flags.writeable
            assert np.array_equal(info["action_mask"], expected)
            assert np.array_equal(env.game.legal_mask(env.state), expected)
            info["action_mask"][:] = True  # the agent's copy: changing it must not change the rules
            illegal = np.flatnonzero(~expected)
            if illegal.size:
                with pytest.raises(IllegalMove, match="not a legal move"):
                    env.step(int(rng.choice(illegal)))
            legal = np.flatnonzero(expected)
            legal = legal[legal != env.resign_action]
            _, _, done, _, info = env.step(int(rng.choice(legal)))
        assert not info["action_mask"].any()
