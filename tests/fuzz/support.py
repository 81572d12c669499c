"""Shared pieces of the fuzz tests: input strategies and the "only typed errors" check.

The rule every parser of outside input must keep: whatever it is fed, it either returns a
value or raises the project's own typed error for that input (which names what was wrong and
where). Anything else escaping (``KeyError``, ``UnicodeDecodeError``, a bare ``ValueError``
from a library) is a crash: the caller cannot tell "bad input" from "bug".

Crashes found and not fixed yet are listed in :data:`KNOWN_OPEN` by their *signature*
(exception type + the innermost project function it came from). The fuzz properties tolerate
exactly those signatures, and ``test_regressions.py`` replays each one as a strict ``xfail``:
when the owner fixes it, that test turns XPASS and fails, which is the cue to delete the entry
here. Nothing else is tolerated.
"""

from __future__ import annotations

import copy
import json
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
REGRESSIONS = Path(__file__).resolve().parent / "regressions"

T = TypeVar("T")


@dataclass(frozen=True)
class Signature:
    """Where an untyped exception comes from: type and innermost project frame."""

    exception: str
    file: str  # relative to the repository root
    function: str

    def __str__(self) -> str:
        return f"{self.exception} from {self.file}:{self.function}"


@dataclass(frozen=True)
class KnownCrash:
    signature: Signature
    #: The line to fix, for the report and the xfail reason.
    fix_at: str
    regression: str  # file name under tests/fuzz/regressions/


#: Crashes found by these fuzz tests that belong to other people's modules (see module doc).
KNOWN_OPEN: tuple[KnownCrash, ...] = (
    # Empty: the three crashes these tests found (a bracketed configure_url host, non-UTF-8
    # capacityAware and scenario files) were fixed in 5c97770 and cbb21d3; their cases stay as
    # regressions in tests/fuzz/regressions/.
)


def signature(exc: BaseException) -> Signature:
    """The innermost frame of the traceback that lies in this repository (not .venv/stdlib)."""
    frames = traceback.extract_tb(exc.__traceback__)
    for frame in reversed(frames):
        if frame.filename.startswith("<"):  # frozen stdlib modules
            continue
        path = Path(frame.filename).resolve()
        try:
            rel = path.relative_to(ROOT)
        except ValueError:
            continue
        if rel.parts[0] in (".venv", "tests"):
            continue
        return Signature(type(exc).__name__, rel.as_posix(), frame.name)
    return Signature(type(exc).__name__, "<outside the project>", "?")


def known(exc: BaseException) -> KnownCrash | None:
    sig = signature(exc)
    return next((k for k in KNOWN_OPEN if k.signature == sig), None)


class UntypedError(AssertionError):
    """A parser let something other than its typed error escape."""


def only_typed(
    allowed: type[BaseException] | tuple[type[BaseException], ...],
    fn: Callable[..., T],
    *args: Any,
    **kwargs: Any,
) -> T | BaseException:
    """Call ``fn``; return its value or the *allowed* typed error it raised.

    Any other exception fails the test with its signature, unless it is a listed
    :data:`KNOWN_OPEN` crash (returned as is, so callers can tell).
    """
    try:
        return fn(*args, **kwargs)
    except allowed as exc:
        if not str(exc).strip():
            raise UntypedError(f"{type(exc).__name__} without a message") from exc
        return exc
    except Exception as exc:
        if known(exc) is not None:
            return exc
        raise UntypedError(f"untyped crash: {signature(exc)}: {exc!r}") from exc


# --- strategies ---------------------------------------------------------------------------

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=30)
)

#: Any JSON-shaped value (NaN and Infinity included: Python's json writes and reads them).
json_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)

#: Values that look almost right to a parser: wrong types of plausible shape.
confusing = st.sampled_from(
    [
        None,
        "",
        "0",
        "-1",
        "1e309",
        "true",
        0,
        -1,
        2**63,
        1.5,
        float("nan"),
        True,
        [],
        {},
        ["x"],
        {"x": 1},
        "30s",
        "5m",
        "\x00",
        "\ufeff",
        "0001-01-01T00:00:00Z",
    ]
)


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    if isinstance(doc, dict):
        for key, value in doc.items():
            out.append((*prefix, key))
            out.extend(_paths(value, (*prefix, key)))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            out.append((*prefix, i))
            out.extend(_paths(value, (*prefix, i)))
    return out


@st.composite
def mutated(draw: st.DrawFn, base: Mapping[str, Any], max_changes: int = 3) -> Any:
    """``base`` with up to ``max_changes`` fields replaced, deleted or added (or all of it)."""
    doc: Any = copy.deepcopy(dict(base))
    for _ in range(draw(st.integers(0, max_changes))):
        paths = _paths(doc)
        action = draw(st.sampled_from(["replace", "confuse", "delete", "add"]))
        if not paths or action == "add":
            target = doc
            if isinstance(target, dict):
                target[draw(st.text(max_size=12))] = copy.deepcopy(draw(json_values))
            continue
        path = draw(st.sampled_from(paths))
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        if action == "delete":
            del parent[key]
        elif action == "confuse":
            # Copies: sampled constants are shared objects, and later changes may edit them.
            parent[key] = copy.deepcopy(draw(confusing))
        else:
            parent[key] = copy.deepcopy(draw(json_values))
    if draw(st.integers(0, 19)) == 0:  # now and then, not a mapping at all
        return copy.deepcopy(draw(json_values))
    return doc


def json_bytes(doc: Any, *, bom: bool = False) -> bytes:
    raw = json.dumps(doc, allow_nan=True).encode()
    return b"\xef\xbb\xbf" + raw if bom else raw


def load_regressions() -> list[dict[str, Any]]:
    """Every regression case kept under tests/fuzz/regressions/ (one JSON file each)."""
    cases = []
    for path in sorted(REGRESSIONS.glob("*.json")):
        case = json.loads(path.read_text())
        case["file"] = path.name
        cases.append(case)
    return cases


def fuzz_settings(examples: int = 200) -> Any:
    """Bounded settings: ``examples`` per property (``FUZZ_SCALE`` multiplies it for a
    longer local run, e.g. ``FUZZ_SCALE=50``), no per-example deadline (CI machines vary)."""
    import os

    from hypothesis import HealthCheck, settings

    scale = float(os.environ.get("FUZZ_SCALE", "1"))
    return settings(
        max_examples=max(1, int(examples * scale)),
        deadline=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.filter_too_much,
        ],
    )
