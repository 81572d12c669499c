"""The table machinery both state machines are built with: placeholder pairs
(:mod:`state_machine.table`) and hot slots (:mod:`state_machine.hot`).

A :class:`Table` is data: a tuple of :class:`Edge` values, each saying who causes it
(passive = proven by an observation; active = chosen by decide) and when. An edge whose
``source`` is None is an *insert*: a record enters the table there (a new pair wanted by
decide, a pair adopted from an earlier listener). Everything else is derived from the
edges: the targets of each state, reachability, the sets code reads ("terminal", "live",
...), the generated docs and the table-driven tests. :meth:`Table.check` is what a commit
calls before it changes anything: a move not in the table, or one whose kind is not the
edge's, raises :class:`InvalidTransition`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Generic, TypeVar

from state_machine.events import Kind

S = TypeVar("S", bound=StrEnum)

#: How an insert's missing source is shown (docs, log lines, metrics labels).
NEW = "(new)"


@dataclass(frozen=True, slots=True)
class Edge(Generic[S]):
    """One allowed change: ``source`` (None: a record enters here) to ``target``."""

    source: S | None
    target: S
    kind: Kind
    when: str

    @property
    def shown_source(self) -> str:
        return self.source.value if self.source is not None else NEW


class InvalidTransition(Exception):
    """A change the table does not allow (no such edge, or not of that kind); nothing was
    changed."""

    def __init__(
        self,
        record_id: str,
        source: StrEnum | None,
        target: StrEnum,
        kind: Kind | None = None,
        *,
        noun: str = "pair",
    ) -> None:
        self.record_id, self.source, self.target, self.kind = record_id, source, target, kind
        shown = source.value if source is not None else NEW
        how = f"{kind.value} " if kind is not None else ""
        super().__init__(
            f"{noun} {record_id}: {how}{shown} -> {target.value} is not in the transition table"
        )


class Table(Generic[S]):
    """The edges of one state machine and what follows from them.

    ``noun`` names a record in errors ("pair", "hot slot"). Built once at import; an edge
    twice (same source, target and kind) or a state no edge reaches is refused here, so a
    table that reads wrong cannot be built.
    """

    def __init__(self, name: str, noun: str, states: type[S], edges: tuple[Edge[S], ...]) -> None:
        self.name, self.noun = name, noun
        self.states: tuple[S, ...] = tuple(states)
        self.edges = edges
        self.inserts = tuple(e for e in edges if e.source is None)
        self.moves = tuple(e for e in edges if e.source is not None)
        triples = [(e.source, e.target, e.kind) for e in edges]
        if len(set(triples)) != len(triples):
            raise ValueError(f"{name}: an edge appears twice")
        if not self.inserts:
            raise ValueError(f"{name}: no insert edge (source None): nothing can enter")
        unreached = set(self.states) - {e.target for e in edges}
        if unreached:
            raise ValueError(f"{name}: no edge reaches {sorted(s.value for s in unreached)}")
        self._triples: frozenset[tuple[S | None, S, Kind]] = frozenset(triples)
        out: dict[S, set[S]] = {s: set() for s in self.states}
        for edge in edges:
            if edge.source is not None:
                out[edge.source].add(edge.target)
        #: For each state, the states it may move to.
        self.targets: Mapping[S, frozenset[S]] = MappingProxyType(
            {s: frozenset(t) for s, t in out.items()}
        )
        #: Where records enter the table.
        self.entries: frozenset[S] = frozenset(e.target for e in self.inserts)
        #: No way out: the record leaves the store once its event is published.
        self.terminal: frozenset[S] = frozenset(s for s in self.states if not self.targets[s])

    # --- checks -------------------------------------------------------------------------

    def allowed(self, source: S, target: S) -> bool:
        """Some edge (of either kind) leads from ``source`` to ``target``."""
        return target in self.targets[source]

    def edge(self, source: S | None, target: S, kind: Kind, record_id: str = "?") -> Edge[S]:
        """The one edge of that kind between two states; :class:`InvalidTransition` if none."""
        for edge in self.edges:
            if (edge.source, edge.target, edge.kind) == (source, target, kind):
                return edge
        raise InvalidTransition(record_id, source, target, kind, noun=self.noun)

    def check(self, record_id: str, source: S | None, target: S, kind: Kind) -> None:
        """Raise :class:`InvalidTransition` unless the table has this edge with this kind."""
        if (source, target, kind) not in self._triples:
            raise InvalidTransition(record_id, source, target, kind, noun=self.noun)

    # --- derived sets -------------------------------------------------------------------

    def reachable_from(self, start: S, *, skipping: Iterable[tuple[S, S]] = ()) -> frozenset[S]:
        """States reachable from ``start`` (not including it unless on a cycle), never
        through an edge in ``skipping``."""
        skip = frozenset(skipping)
        seen: set[S] = set()
        frontier = [start]
        while frontier:
            source = frontier.pop()
            for nxt in self.targets[source]:
                if (source, nxt) in skip or nxt in seen:
                    continue
                seen.add(nxt)
                frontier.append(nxt)
        return frozenset(seen)

    def reaching(self, goal: frozenset[S], *, skipping: Iterable[tuple[S, S]] = ()) -> frozenset[S]:
        """States in ``goal`` or from which a state in ``goal`` is reachable."""
        skip = tuple(skipping)
        return frozenset(
            s for s in self.states if s in goal or goal & self.reachable_from(s, skipping=skip)
        )

    def where(self, predicate: Callable[[S], bool]) -> frozenset[S]:
        return frozenset(s for s in self.states if predicate(s))

    def names(self, states: Iterable[S]) -> str:
        """``states`` in table order, comma-separated (docs)."""
        wanted = frozenset(states)
        return ", ".join(s.value for s in self.states if s in wanted)
