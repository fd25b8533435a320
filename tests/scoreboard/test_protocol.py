"""The wire schemas' own checks (palaestra.scoreboard.protocol), shared by the client and the server."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from palaestra.scoreboard import protocol


@pytest.mark.parametrize("model", [protocol.EvaluationCreate, protocol.AlgorithmCreate])
@pytest.mark.parametrize("writeup", ["notaurl", "gist.github.com/me/1", "javascript:alert(1)", "ftp://x.org/a"])
def test_a_writeup_that_is_not_a_web_address_is_refused(model: type, writeup: str) -> None:
    extra = {"name": "alg"} if model is protocol.AlgorithmCreate else {}
    with pytest.raises(ValidationError, match="writeup must be an http\\(s\\) URL"):
        model(writeup=writeup, **extra)


def test_a_writeup_url_is_kept() -> None:
    body = protocol.EvaluationCreate(writeup=" https://gist.github.com/me/1234 ")
    assert body.writeup == "https://gist.github.com/me/1234"
    assert protocol.EvaluationCreate().writeup is None
