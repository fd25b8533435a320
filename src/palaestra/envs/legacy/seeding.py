"""gym 0.9.x's seeding, so that a seeded 2017 environment replays the episodes 2017 played.

* :func:`random_state_2017` -- ``gym.utils.seeding.np_random(seed)``: a ``numpy.random.RandomState``
  seeded with the first 8 bytes of ``sha512(str(seed))`` (spec §2), read as a little-endian integer
  (what 2017's x86 machines read; the 2017 code used the machine's byte order).
* :class:`Seeded2017` -- the ``reset(seed=...)`` of palaestra's 2017 environments: it seeds that
  ``RandomState`` (``self.random_2017``), which the environment draws from with 2017's calls.

``env.reset(seed=s)`` in palaestra is ``env.seed(s); env.reset()`` in gym 0.9.
"""

from __future__ import annotations

import hashlib
import os
import struct

import gymnasium
import numpy as np

__all__ = ["Seeded2017", "hash_seed", "random_state_2017"]

_MAX_SEED = 2**64


def hash_seed(seed: int) -> int:
    """``gym.utils.seeding.hash_seed``: the seed's decimal string through sha512, 8 bytes of it."""
    digest = hashlib.sha512(str(seed % _MAX_SEED).encode("utf8")).digest()
    return int(struct.unpack("<Q", digest[:8])[0])


def _int_list(bigint: int) -> list[int]:
    words = []
    while bigint > 0:
        bigint, word = divmod(bigint, 2**32)
        words.append(word)
    return words or [0]


def random_state_2017(seed: int | None = None) -> tuple[np.random.RandomState, int]:
    """``(RandomState, seed)`` as ``gym.utils.seeding.np_random(seed)`` made them; ``None`` draws a seed."""
    if seed is None:
        seed = int.from_bytes(os.urandom(8), "little")
    elif not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise gymnasium.error.Error(f"Seed must be a non-negative integer or omitted, not {seed!r}")
    seed = int(seed) % _MAX_SEED
    return np.random.RandomState(_int_list(hash_seed(seed))), seed


class Seeded2017:
    """Mixin for a ``gymnasium.Env`` that draws its randomness the 2017 way, from ``self.random_2017``.

    Call :meth:`_seed_2017` at the start of ``reset``: it seeds Gymnasium's ``np_random`` as
    ``Env.reset`` does (for code that expects one), and with a seed (or on the first reset) makes
    the 2017 ``RandomState`` that the dynamics draw from; later resets keep drawing from it, as
    2017's did.
    """

    random_2017: np.random.RandomState | None = None

    def _seed_2017(self, seed: int | None) -> np.random.RandomState:
        gymnasium.Env.reset(self, seed=seed)  # type: ignore[arg-type]
        if seed is not None or self.random_2017 is None:
            self.random_2017, _ = random_state_2017(seed)
        return self.random_2017
