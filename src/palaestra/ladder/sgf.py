"""SGF (Smart Game Format, FF[4]): the one writer and the one strict parser of palaestra's game records.

* :func:`dumps` writes one game, a main line of nodes, each a mapping of property to values.
* :func:`loads` reads SGF from untrusted hands (the scoreboard parses uploads with it):

  - at most :data:`MAX_BYTES` of UTF-8 text (a byte-order mark first is allowed, as editors on
    Windows write it) and :data:`MAX_NODES` nodes;
  - one game per file (a collection of several games is refused);
  - variations are **refused**: a ladder game is one line of moves. Nested trees that each hold a
    single child (some editors write the main line so) are read as that line, up to
    :data:`MAX_DEPTH` levels; a tree with two children or more is an :class:`SGFError`;
  - property names must be upper-case letters (FF[4]); unknown properties are **kept** in the node
    (a game's replay reads only the ones it knows, and ignores the rest);
  - every problem is an :class:`SGFError` saying what is wrong and at which byte.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from palaestra.errors import Error

__all__ = ["MAX_BYTES", "MAX_DEPTH", "MAX_NODES", "Node", "SGFError", "dumps", "loads"]

#: An SGF node: property name -> its values (in order).
Node = dict[str, list[str]]

#: The largest SGF text accepted: a 19x19 game of 722 moves with comments is some 10 kB.
MAX_BYTES = 1 << 20
#: The most nodes accepted (the root plus moves): twice the longest game palaestra plays (2·19² moves).
MAX_NODES = 2 * 2 * 19 * 19 + 1
#: The deepest nesting of single-child trees accepted.
MAX_DEPTH = 64
_WHITESPACE = " \t\r\n"


class SGFError(Error):
    """SGF text that palaestra does not accept; the message says what and where."""


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("]", "\\]")


def dumps(nodes: Sequence[Mapping[str, Sequence[str]]]) -> str:
    """One game tree of ``nodes`` (the root first), a node a line."""
    lines = []
    for node in nodes:
        properties = "".join(
            name + "".join(f"[{_escape(value)}]" for value in values) for name, values in node.items()
        )
        lines.append(";" + properties)
    return "(" + "\n".join(lines) + ")\n"


def loads(data: str | bytes, max_bytes: int = MAX_BYTES, max_nodes: int = MAX_NODES) -> list[Node]:
    """The nodes of the one game in ``data``, root first (see the module docstring for the limits)."""
    if isinstance(data, bytes):
        if len(data) > max_bytes:
            raise SGFError(f"The SGF is {len(data)} bytes; at most {max_bytes} are accepted")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SGFError(f"The SGF is not UTF-8 text (byte {exc.start})") from None
    else:
        text = data
        if len(text.encode("utf-8")) > max_bytes:
            raise SGFError(f"The SGF is over {max_bytes} bytes; at most {max_bytes} are accepted")
    return _Parser(text.removeprefix("\ufeff"), max_nodes).game()


class _Parser:
    def __init__(self, text: str, max_nodes: int) -> None:
        self.text = text
        self.at = 0
        self.max_nodes = max_nodes

    def fail(self, problem: str) -> SGFError:
        return SGFError(f"Malformed SGF at character {self.at}: {problem}")

    def skip_space(self) -> None:
        text, at = self.text, self.at
        while at < len(text) and text[at] in _WHITESPACE:
            at += 1
        self.at = at

    def peek(self) -> str:
        self.skip_space()
        return self.text[self.at] if self.at < len(self.text) else ""

    def expect(self, char: str) -> None:
        if self.peek() != char:
            found = repr(self.text[self.at]) if self.at < len(self.text) else "the end of the text"
            raise self.fail(f"expected {char!r}, found {found}")
        self.at += 1

    def game(self) -> list[Node]:
        if self.peek() != "(":
            raise self.fail("an SGF game starts with '('")
        nodes: list[Node] = []
        depth = 0
        # Each level: '(' then nodes, then either ')' (closing every level) or one nested '('.
        while self.peek() == "(":
            depth += 1
            if depth > MAX_DEPTH:
                raise self.fail(f"trees nested deeper than {MAX_DEPTH} levels")
            self.at += 1
            if self.peek() != ";":
                raise self.fail("a game tree holds at least one node (';')")
            while self.peek() == ";":
                nodes.append(self.node())
                if len(nodes) > self.max_nodes:
                    raise self.fail(f"more than {self.max_nodes} nodes")
        for _ in range(depth):
            if self.peek() == "(":
                raise self.fail(
                    "a variation: palaestra accepts one line of moves per game (no variations)"
                )
            self.expect(")")
        if self.peek():
            if self.peek() == "(":
                raise self.fail("a second game: upload one game per SGF file")
            raise self.fail(f"text after the game: {self.text[self.at:self.at + 20]!r}")
        return nodes

    def node(self) -> Node:
        self.at += 1  # the ';'
        node: Node = {}
        while self.peek().isalpha():
            start = self.at
            while self.at < len(self.text) and self.text[self.at].isalpha():
                self.at += 1
            name = self.text[start : self.at]
            if not (name.isascii() and name.isupper()):
                self.at = start
                raise self.fail(f"property name {name!r} is not upper-case letters")
            if name in node:
                self.at = start
                raise self.fail(f"property {name} twice in one node")
            if self.peek() != "[":
                raise self.fail(f"property {name} has no value")
            values = []
            while self.peek() == "[":
                values.append(self.value())
            node[name] = values
        if self.peek() not in (";", "(", ")"):
            found = repr(self.peek()) if self.peek() else "the end of the text"
            raise self.fail(f"expected a property, ';', '(' or ')', found {found}")
        return node

    def value(self) -> str:
        self.at += 1  # the '['
        text = self.text
        parts = []
        start = self.at
        while True:
            end = text.find("]", self.at)
            escape = text.find("\\", self.at)
            if end < 0:
                self.at = start
                raise self.fail("a property value that is never closed with ']'")
            if 0 <= escape < end:
                parts.append(text[self.at : escape])
                if escape + 1 >= len(text):
                    raise self.fail("a '\\' at the end of the text")
                following = text[escape + 1]
                self.at = escape + 2
                if following in "\r\n":  # an escaped line break is a soft break: dropped, whichever
                    # of FF[4]'s four line breaks it is (\n, \r, \r\n, \n\r)
                    pair = text[self.at : self.at + 1]
                    if pair and pair in "\r\n" and pair != following:
                        self.at += 1
                else:
                    parts.append(following)
                continue
            parts.append(text[self.at : end])
            self.at = end + 1
            return "".join(parts)
