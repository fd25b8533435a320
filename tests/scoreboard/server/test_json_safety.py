"""Every parse of client-supplied JSON answers malformed or too-deep input with a 4xx problem
document, never a 500: request bodies, uploaded episode batches, a video archive's ``manifest.json``
and its metadata and terminal recordings, 2017-style JSON query strings and benchmark-run ``tags``.

Hypothesis throws random and adversarial JSON (deep nesting, huge numbers, NaN and Infinity, wrong
types, broken text) at each parser of a real server process; one helper,
:func:`palaestra.scoreboard.protocol.parse_json`, does all the parsing.
"""

from __future__ import annotations

import json
import math
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from palaestra.monitoring.files import CONTENT_TYPE_ANSI
from palaestra.scoreboard import protocol
from tests.scoreboard.server_helpers import (
    ScoreboardServer,
    ansi_recording,
    create_file,
    error_of,
    post_upload,
    tar_gz,
)

#: Examples per parser against the server (each costs one or two requests).
SERVER_EXAMPLES = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

# -- the documents ---------------------------------------------------------------------------------

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**40), max_value=10**40),  # past 64 bits: orjson refuses, json decodes
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


def _dumps(value: Any) -> bytes:
    """JSON as a careless client writes it: NaN and Infinity as bare words, some as ``1e999``."""
    text = json.dumps(value, allow_nan=True)
    return text.replace("-Infinity", "-1e999").encode()


def _nested(depth: int, kind: str) -> bytes:
    opening, closing = ('{"a":', "}") if kind == "object" else ("[", "]")
    return (opening * depth + "1" + closing * depth).encode()


#: Nesting far past the limit (up to the 100,000 levels that used to make a 500), and just past it.
_deep = st.builds(
    _nested,
    st.sampled_from([protocol.MAX_JSON_DEPTH + 1, 2_000, 100_000]),
    st.sampled_from(["array", "object"]),
)
_broken = st.one_of(
    st.binary(max_size=64),
    st.text(max_size=64).map(str.encode),
    _values.map(_dumps).map(lambda b: b[: max(0, len(b) - 1)]),  # truncated
    st.sampled_from([b"", b"{", b'{"a": NaN}', b"[1e999]", b"9" * 5000, b'"\\ud800"', b"\xff\xfe"]),
)
#: What a hostile or broken client sends: random JSON of any type, too deep, or not JSON at all.
adversarial = st.one_of(_values.map(_dumps), _deep, _broken)


def assert_problem(r: httpx.Response) -> dict[str, Any]:
    """``r`` is a 4xx problem document (status, ``detail``, ``type``, request id), not a 500."""
    assert 400 <= r.status_code < 500, (r.status_code, r.text[:500])
    return error_of(r, r.status_code)


def assert_handled(r: httpx.Response) -> None:
    """Success, or a 4xx problem document: never a server error."""
    if r.status_code >= 400:
        assert_problem(r)


# -- the helper itself ----------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(adversarial)
def test_parse_json_either_decodes_or_names_the_problem(data: bytes) -> None:
    try:
        doc = protocol.parse_json(data, "The document")
    except protocol.JSONInputError as e:
        assert str(e).startswith("The document ")
        return
    # what it accepts is finite and within the depth limit: safe for every encoder downstream
    json.dumps(doc, allow_nan=False)


@pytest.mark.parametrize("kind", ["array", "object"])
def test_parse_json_refuses_nesting_past_the_limit_and_accepts_it_up_to_the_limit(kind: str) -> None:
    deepest = protocol.MAX_JSON_DEPTH
    assert protocol.parse_json(_nested(deepest, kind), "x") is not None
    for depth in (deepest + 1, 100_000):
        with pytest.raises(protocol.JSONInputError, match=f"nested deeper than {deepest} levels"):
            protocol.parse_json(_nested(depth, kind), "x")


def test_parse_json_refuses_nan_and_infinity_unless_allowed() -> None:
    for text in (b"[NaN]", b"[Infinity]", b"[1e999]", b"[-1e999]"):
        with pytest.raises(protocol.JSONInputError):
            protocol.parse_json(text, "x")
    assert math.isnan(protocol.parse_json(b"[NaN]", "x", allow_nan=True)[0])


# -- each parser of the server --------------------------------------------------------------------


@SERVER_EXAMPLES
@given(
    body=adversarial,
    route=st.sampled_from(["/v1/files", "/v1/evaluations", "/v1/benchmark_runs", "/v1/algorithms"]),
)
def test_request_bodies(scoreboard_server: ScoreboardServer, body: bytes, route: str) -> None:
    with scoreboard_server.client() as c:
        r = c.post(route, content=body, headers={"Content-Type": "application/json"})
    assert_handled(r)


def test_a_deep_body_is_a_400_naming_the_depth(scoreboard_server: ScoreboardServer) -> None:
    """Also a 2017-style query string, a video archive's manifest and an episode batch nested deep."""
    with scoreboard_server.client() as c:
        for route in ("/v1/files", "/v1/evaluations", "/v1/benchmark_runs", "/v1/algorithms"):
            body = error_of(c.post(route, content=_nested(100_000, "array")), 400)
            assert "nested deeper than" in body["detail"]
        query = quote('{"a":' + _nested(2_000, "array").decode() + "}", safe="")  # a URL's length allows
        assert "nested deeper than" in error_of(c.get(f"/v1/evaluations?{query}"), 400)["detail"]
        f = create_file(c, "video")
        r = post_upload(f, tar_gz([("manifest.json", _nested(100_000, "array"))]))
        assert "nested deeper than" in error_of(r, 400)["detail"]
        f = create_file(c, "episode_batch")
        assert "nested deeper than" in error_of(post_upload(f, _nested(100_000, "array")), 400)["detail"]


@SERVER_EXAMPLES
@given(doc=adversarial)
def test_uploaded_episode_batches(scoreboard_server: ScoreboardServer, doc: bytes) -> None:
    with scoreboard_server.client() as c:
        f = create_file(c, "episode_batch")
    assert_problem(post_upload(f, doc))


@SERVER_EXAMPLES
@given(manifest=adversarial)
def test_a_video_archives_manifest(scoreboard_server: ScoreboardServer, manifest: bytes) -> None:
    with scoreboard_server.client() as c:
        f = create_file(c, "video")
    assert_handled(post_upload(f, tar_gz([("manifest.json", manifest)])))


@SERVER_EXAMPLES
@given(member=adversarial, which=st.sampled_from(["recording", "metadata"]))
def test_a_terminal_recording_and_its_metadata(
    scoreboard_server: ScoreboardServer, member: bytes, which: str
) -> None:
    name, meta = "openaigym.video.0.1.video000000.json", "openaigym.video.0.1.video000000.meta.json"
    recording = member if which == "recording" else ansi_recording()
    metadata = (
        member
        if which == "metadata"
        else json.dumps({"episode_id": 0, "content_type": CONTENT_TYPE_ANSI}).encode()
    )
    manifest = json.dumps({"version": 0, "videos": [[name, meta]]}).encode()
    with scoreboard_server.client() as c:
        f = create_file(c, "video")
    r = post_upload(f, tar_gz([(name, recording), (meta, metadata), ("manifest.json", manifest)]))
    assert_problem(r)


@SERVER_EXAMPLES
@given(query=adversarial, route=st.sampled_from(["/v1/evaluations", "/v1/files", "/v1/benchmark_runs"]))
def test_2017_style_json_query_strings(scoreboard_server: ScoreboardServer, query: bytes, route: str) -> None:
    text = query.decode("utf-8", "replace")
    if not text.startswith("{"):
        text = "{" + text  # the 2017 client's form: the query string is a JSON object
    assume(len(text) < 10_000)  # URLs are far shorter than bodies
    with scoreboard_server.client() as c:
        assert_handled(c.get(f"{route}?{quote(text, safe='')}"))


@SERVER_EXAMPLES
@given(tags=adversarial)
def test_benchmark_run_tags(scoreboard_server: ScoreboardServer, tags: bytes) -> None:
    text = tags.decode("utf-8", "replace")
    with scoreboard_server.client() as c:
        r = c.post("/v1/benchmark_runs", json={"benchmark_id": "ClassicControl2-v1", "tags": text})
        assert_handled(r)
        if r.status_code < 400:  # a JSON object within the limits: it is stored and read back
            assert c.get(f"/v1/benchmark_runs/{r.json()['id']}").status_code == 200


def test_tags_nested_2000_deep_are_a_400(scoreboard_server: ScoreboardServer) -> None:
    """Once a 500 (RecursionError) from the tags of a benchmark run."""
    with scoreboard_server.client() as c:
        tags = _nested(2_000, "array").decode()
        body = error_of(c.post("/v1/benchmark_runs", json={"benchmark_id": "X-v0", "tags": tags}), 400)
    assert "tags" in body["detail"] and "nested deeper than" in body["detail"]
