"""The SGF parser takes untrusted text: limits, variations, escapes, and errors that say where."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from palaestra.ladder import sgf
from palaestra.ladder.records import RecordError, from_sgf
from palaestra.ladder.replay import GameRejected, replay


def test_written_nodes_read_back_with_escapes() -> None:
    nodes = [{"FF": ["4"], "C": ["a ] bracket and a \\ backslash"], "PB": ["x"]}, {"B": ["ee"]}, {"W": [""]}]
    assert sgf.loads(sgf.dumps(nodes)) == nodes


def test_a_main_line_written_as_nested_single_child_trees_is_one_line() -> None:
    assert sgf.loads("(;SZ[9](;B[ee](;W[cc])))") == [{"SZ": ["9"]}, {"B": ["ee"]}, {"W": ["cc"]}]


def test_variations_are_refused() -> None:
    with pytest.raises(sgf.SGFError, match="variation"):
        sgf.loads("(;SZ[9](;B[ee])(;B[cc]))")


def test_unknown_properties_are_kept() -> None:
    assert sgf.loads("(;SZ[9]XY[one][two];B[aa])")[0]["XY"] == ["one", "two"]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "starts with"),
        ("(;SZ[9]", "found the end of the text"),
        ("(;B[aa](;W[bb])", "expected ')'"),
        ("(;SZ[9)", "never closed"),
        ("(;sz[9])", "upper-case"),
        ("(;SZ[9]SZ[9])", "twice"),
        ("(;SZ)", "no value"),
        ("(;SZ[9])(;SZ[9])", "second game"),
        ("(;SZ[9]) trailing", "text after"),
        ("(SZ[9])", "at least one node"),
        ("(;C[x]" * 100 + ")" * 100, "nested deeper"),
    ],
)
def test_malformed_text_is_an_error_naming_the_problem(text: str, problem: str) -> None:
    with pytest.raises(sgf.SGFError, match=re.escape(problem)):
        sgf.loads(text)


def test_size_and_node_limits() -> None:
    with pytest.raises(sgf.SGFError, match="at most 100 are accepted"):
        sgf.loads(b"(;C[" + b"x" * 200 + b"])", max_bytes=100)
    with pytest.raises(sgf.SGFError, match="more than 3 nodes"):
        sgf.loads("(;SZ[9];B[aa];W[bb];B[cc])", max_nodes=3)
    with pytest.raises(sgf.SGFError, match="not UTF-8"):
        sgf.loads(b"(;C[\xff])")


SGF_ALPHABET = "();[]\\ \nBWABSZKMREGMC0123456789abcdefst+.-"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=SGF_ALPHABET, max_size=200))
def test_any_text_is_a_game_or_a_named_error(text: str) -> None:
    """Whatever an upload holds, reading it ends in a game record or in an error that says why."""
    try:
        record = from_sgf(text)
    except (sgf.SGFError, RecordError):
        return
    try:
        replay(record)
    except GameRejected:
        pass


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.dictionaries(
            st.text("ABCXYZ", min_size=1, max_size=3), st.lists(st.text(max_size=8), min_size=1, max_size=2), max_size=3
        ),
        min_size=1,
        max_size=5,
    )
)
def test_written_nodes_always_read_back(nodes: list[dict[str, list[str]]]) -> None:
    text = sgf.dumps(nodes)
    assert sgf.loads(text) == nodes


def test_a_utf8_byte_order_mark_before_the_game_is_accepted() -> None:
    assert sgf.loads(b"\xef\xbb\xbf(;SZ[9];B[ee])") == [{"SZ": ["9"]}, {"B": ["ee"]}]
    assert sgf.loads("\ufeff(;SZ[9])") == [{"SZ": ["9"]}]


@pytest.mark.parametrize("newline", ["\n", "\r", "\r\n", "\n\r"])
def test_a_soft_line_break_is_dropped_whichever_line_break_it_is(newline: str) -> None:
    # FF[4]: a '\' before a line break (any of the four) joins the lines; the next break is kept
    assert sgf.loads(f"(;C[one \\{newline}two{newline}three])")[0]["C"] == [f"one two{newline}three"]


@pytest.mark.parametrize(("result", "winner"), [("B+", "black"), ("W+", "white")])
def test_a_result_without_a_score_is_a_win_that_the_board_decides(result: str, winner: str) -> None:
    # two passes on an empty 9x9 board: white wins by komi; "W+" says so without a count
    record = from_sgf(f"(;GM[1]FF[4]SZ[9]KM[7.5]PB[a]PW[b]RE[{result}];B[];W[])")
    assert (record.winner, record.reason, record.score) == (winner, "score", None)
    if winner == "white":
        assert replay(record).score == -7.5
    else:
        with pytest.raises(GameRejected, match="a win for white"):
            replay(record)
