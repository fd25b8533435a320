"""Failed sign-ins are throttled per address and per (address, name), with waits that grow, and never
lock the owner out from another address (10 wrong passwords from anyone used to, again and again)."""

from __future__ import annotations

import uuid

import httpx
import pytest

from palaestra.scoreboard.server.accounts import sign_in_limits
from tests.scoreboard.server_helpers import ScoreboardServer, form_token
from tests.server_process import InProcessServer

PASSWORD = "correct horse battery"
#: Linux answers every 127.0.0.0/8 address on loopback: a client bound to another one is another address
ATTACKER = "127.0.0.2"


def _client(url: str, address: str = "127.0.0.1") -> httpx.Client:
    return httpx.Client(base_url=url, transport=httpx.HTTPTransport(local_address=address), timeout=60)


def _sign_in(client: httpx.Client, name: str, password: str) -> httpx.Response:
    token = form_token(client.get("/login").text)
    return client.post("/login", data={"name": name, "password": password, "csrf_token": token})


def _retry_after(response: httpx.Response) -> int:
    assert response.status_code == 429, response.text
    assert "Too many failed sign-ins from your address" in response.text
    return int(response.headers["Retry-After"])


def _to_the_hour(server: InProcessServer) -> None:
    """Move the clock to the start of an hour, where every window of the tiers starts together."""
    server.clock.advance(3600 - server.clock.time() % 3600)


def test_wrong_passwords_from_one_address_never_lock_the_owner_out_from_another(
    scoreboard_server: ScoreboardServer,
) -> None:
    name = f"owner{uuid.uuid4().hex[:8]}"
    scoreboard_server.create_user(name, PASSWORD)
    with _client(scoreboard_server.url, ATTACKER) as attacker, _client(scoreboard_server.url) as owner:
        for round_ in range(2):  # repeatably: a second wave changes nothing for the owner
            answers = [_sign_in(attacker, name, f"guess {round_} {i}") for i in range(12)]
            assert {r.status_code for r in answers} <= {401, 429}
            held = [r for r in answers if r.status_code == 429]
            assert held and all(_retry_after(r) > 0 for r in held), "the guesser is slowed down"
            # the right password from the guessing address is held too: guessing gets no answer
            assert _sign_in(attacker, name, PASSWORD).status_code == 429
            signed_in = _sign_in(owner, name, PASSWORD)
            assert signed_in.status_code == 303, signed_in.text
            assert owner.get("/settings/profile").status_code == 200
            owner.cookies.clear()


def test_the_waits_grow_with_the_failures_and_pass_when_the_clock_moves_on(
    in_process_server: InProcessServer,
) -> None:
    server = in_process_server
    server.create_user("ada", PASSWORD)
    _to_the_hour(server)
    with _client(server.url) as c:
        waits = []
        for fail_in_a_row, expected_wait in ((5, 60), (5, 900 - 60), (5, 60), (5, 3600 - 900 - 60)):
            for i in range(fail_in_a_row):
                assert _sign_in(c, "ada", f"wrong {i}").status_code == 401
            held = _sign_in(c, "ada", PASSWORD)
            waits.append(_retry_after(held))
            assert waits[-1] == expected_wait
            server.clock.advance(waits[-1] - 1)
            assert _sign_in(c, "ada", PASSWORD).status_code == 429, "not a second early"
            server.clock.advance(1)
        assert waits == [60, 840, 60, 2640]
        assert _sign_in(c, "ada", PASSWORD).status_code == 303


def test_a_success_starts_the_names_count_afresh(in_process_server: InProcessServer) -> None:
    server = in_process_server
    server.create_user("bea", PASSWORD)
    _to_the_hour(server)
    with _client(server.url) as c:
        for i in range(4):
            assert _sign_in(c, "bea", f"typo {i}").status_code == 401
        assert _sign_in(c, "bea", PASSWORD).status_code == 303
        c.cookies.clear()
        for i in range(4):
            assert _sign_in(c, "bea", f"typo again {i}").status_code == 401, "four more typos are fine"


def test_one_address_spraying_many_names_is_held_back_for_every_name_but_not_other_addresses(
    in_process_server: InProcessServer,
) -> None:
    server = in_process_server
    server.create_user("cy", PASSWORD)
    _to_the_hour(server)
    limit, window = sign_in_limits.ADDRESS_TIERS[0]
    with _client(server.url, ATTACKER) as sprayer, _client(server.url) as owner:
        for i in range(limit):
            assert _sign_in(sprayer, f"user{i}", "Summer2026!").status_code == 401
        assert _retry_after(_sign_in(sprayer, "cy", PASSWORD)) == window
        assert _sign_in(owner, "cy", PASSWORD).status_code == 303


@pytest.mark.parametrize(
    ("address", "counted_as"),
    [
        ("203.0.113.7", "203.0.113.7"),
        ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:bbbb::9", "2001:db8:1:2::/64"),
        ("::ffff:203.0.113.7", "203.0.113.7"),
        ("an unknown address", "an unknown address"),
    ],
)
def test_an_ipv6_client_is_counted_by_its_64_network(address: str, counted_as: str) -> None:
    assert sign_in_limits.client_network(address) == counted_as
