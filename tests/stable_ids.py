"""Test ids that name the same test in every process.

pytest-xdist collects the suite once per worker, each worker a process with its own hash seed,
and refuses to run when the workers' lists differ ("Different tests were collected between gw0
and gw1"). An id built with ``str`` of a set follows the hash seed; one holding an object's
default ``repr`` follows its address. ``tests/conftest.py`` refuses such ids at collection,
so the failure is one clear message in any run, not a worker-count-dependent crash.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: ``frozenset({...})``/``set(...)``/``{a, b}`` (a set literal: braces without a colon) and
#: ``<... at 0x7f...>``.
_UNSTABLE = re.compile(r"\bfrozenset\(|\bset\(|\{[^{}:]*,[^{}:]*\}|\bat 0x[0-9a-f]+")


def unstable_ids(nodeids: Iterable[str]) -> list[str]:
    """The node ids whose parameter part (inside ``[...]``) may differ between processes."""
    found = []
    for nodeid in nodeids:
        _, bracket, params = nodeid.partition("[")
        if bracket and _UNSTABLE.search(params):
            found.append(nodeid)
    return found
