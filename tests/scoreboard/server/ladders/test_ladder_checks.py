"""The server's check of a match upload: whatever the upload holds, a Problem names what is wrong (never a crash)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from palaestra.scoreboard.protocol.ladder import MatchUpload
from palaestra.scoreboard.server.ladders.checks import check_match
from palaestra.scoreboard.server.problems import Problem

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 30) | st.floats(allow_nan=True) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=12,
)
_MATCH = st.fixed_dictionaries(
    {"format": st.sampled_from(["palaestra.match", "x"]), "game": st.sampled_from(["Go", "Hex", 3])},
    optional={
        "board_size": _JSON | st.integers(1, 26), "komi": _JSON, "swap": _JSON,
        "players": _JSON | st.just([{"name": "a"}, {"name": "b"}]),
        "games": _JSON | st.just([{"file": "g.sgf"}]) | st.just([{"file": "g.hex.json"}]),
    },
)  # fmt: skip
_RECORD = st.sampled_from(
    ["(;GM[1]SZ[9]KM[0]PB[a]PW[b]RE[B+R];B[ee])", '{"format": "palaestra.hex-game", "board_size": 9}', "(;"]
) | st.text(max_size=40)


@settings(max_examples=300, deadline=None)
@given(_MATCH, st.dictionaries(st.sampled_from(["g.sgf", "g.hex.json", "x"]), _RECORD, max_size=2))
def test_any_upload_is_checked_or_refused_with_a_problem(match: dict[str, Any], games: dict[str, str]) -> None:
    try:
        checked = check_match(MatchUpload(match=match, games=games))
    except Problem as problem:
        assert problem.status in (400, 413, 422) and problem.detail
    else:
        assert checked.games


def test_a_checked_match_comes_back_from_the_checking_process_as_it_was_checked() -> None:
    # the moves travel as one string per game (see CheckedGame.__reduce__): the round trip changes nothing
    import dataclasses
    import pickle

    record = "(;GM[1]SZ[9]KM[6.5]PB[a]PW[b]RE[W+R];B[ee];W[cc];B[];W[gg])"
    checked = check_match(MatchUpload(
        match={"format": "palaestra.match", "game": "Go", "board_size": 9, "komi": 6.5,
               "players": [{"name": "a"}, {"name": "b"}], "games": [{"file": "g.sgf"}, {"file": "h.sgf"}]},
        games={"g.sgf": record, "h.sgf": record.replace(";B[];W[gg]", "")},
    ))  # fmt: skip
    assert pickle.loads(pickle.dumps(checked)) == checked
    assert [game.record.moves for game in checked.games] == [["E5", "C7", "pass", "G3"], ["E5", "C7"]]
    odd = dataclasses.replace(checked.games[0], record=dataclasses.replace(checked.games[0].record, moves=["a\nb", ""]))
    assert pickle.loads(pickle.dumps(odd)) == odd  # kept whole, were a move ever written with a line break
    for moves in ([], [""], ["pass"]):
        game = dataclasses.replace(checked.games[0], record=dataclasses.replace(checked.games[0].record, moves=moves))
        assert pickle.loads(pickle.dumps(game)).record.moves == moves
