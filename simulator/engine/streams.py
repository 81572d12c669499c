"""Common random numbers: one seeded stream per kind of draw.

Strategies are compared on the same seed, so each should meet the same luck. With one stream
per component, draws are handed out in the order they are asked for: a strategy that creates two
placeholder pods before its first runner pod gives that runner the third start latency, where
stock ARC gives it the first, and the first NodeClaim of a strategy that launched a node for a
warm pool boots with another draw than stock ARC's first. The ratio of the two strategies then
measures the draw, not the strategy (docs/design.md#simulator, "Common random numbers").

So every component keys its draws by what they are for: the n-th runner pod to bind starts after
the n-th draw of the runner image's stream in every strategy, the n-th NodeClaim of a NodePool
boots after that pool's n-th draw, and a placeholder's start never shifts a runner's. The
distributions are unchanged; only which draw goes to which object is (the standard variance
reduction for comparing alternatives on one model).
"""

from __future__ import annotations

import random


class Streams:
    """Independent ``random.Random`` streams derived from one seed, one per key.

    ``streams("boot", "general")`` returns the same stream on every call; two keys never share
    one. Keys are joined into the seed string (string seeds hash with SHA-512, independent of
    ``PYTHONHASHSEED``).
    """

    def __init__(self, seed: int | str) -> None:
        self._seed = str(seed)
        self._streams: dict[tuple[str, ...], random.Random] = {}

    @classmethod
    def from_rng(cls, rng: random.Random) -> Streams:
        """Streams seeded by one draw of ``rng`` (a component handed a single generator)."""
        return cls(rng.getrandbits(64))

    def __call__(self, *key: str) -> random.Random:
        stream = self._streams.get(key)
        if stream is None:
            stream = self._streams[key] = random.Random("/".join((self._seed, *key)))
        return stream
