"""The shared metric store of a simulated fleet: a world-level Prometheus with its staleness.

What a real fleet has (docs/fleet.md): each cluster's Prometheus scrapes its listeners every
scrape interval, the recording rules (config/monitoring/fleet-rules.yaml) evaluate every
evaluation interval over the latest scrape, and a listener with ``fleetView`` on reads the
rules' rows through the query API every ``fleetView.pollInterval``. So a listener acts on a
row that is up to scrape + evaluation + poll interval old, and this store makes every
simulated figure pay exactly that:

- :meth:`FleetStore.join`: a capacity-aware driver's scale set becomes a scrape target (its
  cluster and fleet key); each scrape reads what its ``/metrics`` would say right then
  (:class:`MemberSample`, from the driver's last step).
- every ``evaluation_interval`` the rules run over the latest scrape of each target: a row per
  (fleet, cluster) stamped with the evaluation time, as ``timestamp()`` of a recorded series
  would say. A target whose latest scrape is older than Prometheus's 5 minute look-back has
  no row (its series went stale).
- :meth:`FleetStore.query`: the rows of one fleet, or an error while the store is down
  (:meth:`FleetStore.down`, the ``fleet_store_down`` fault). While down nothing is scraped or
  evaluated either, so after it comes back the rows are old until the next evaluation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from reconciler.fleet import ClusterRow, FleetView
from scaleset.carry_out import CarriedOut
from simulator.engine.loop import EventLoop
from state_machine.states import PairState

#: The shipped PodMonitor's interval (config/monitoring/podmonitor.yaml).
SCRAPE_INTERVAL = 30.0
#: A common rule evaluation interval (Prometheus's default is 1m; kube-prometheus-stack 30s).
EVALUATION_INTERVAL = 30.0
#: Prometheus's default look-back: a series not scraped for this long is stale (no row).
LOOKBACK = 300.0
#: The trouble rule's range: a pair timed out within it (fleet-rules.yaml, ``[10m]``).
TROUBLE_WINDOW = 600.0


class TroubleSeries:
    """What a listener's series say of capacity trouble, as the trouble rule reads them:
    failing closed (the gauge) or a pair TIMED_OUT within :data:`TROUBLE_WINDOW` (the
    transitions counter). A step observer (scaleset/carry_out.py), as the listener's metrics
    are: it reads each output once carried out."""

    def __init__(self, loop: EventLoop) -> None:
        self._loop = loop
        self._failing_closed = False
        self._last_timeout: float | None = None

    def observe(self, step: CarriedOut) -> None:
        output = step.output
        self._failing_closed = output.failing_closed
        if any(e.target is PairState.TIMED_OUT for e in output.events):
            self._last_timeout = self._loop.now()

    @property
    def trouble(self) -> bool:
        last = self._last_timeout
        recent = last is not None and self._loop.now() - last < TROUBLE_WINDOW
        return self._failing_closed or recent


@dataclass(frozen=True, slots=True)
class MemberSample:
    """What one listener's series say at a scrape (the inputs of the recording rules)."""

    free_slots: int
    in_flight: int
    queued: int
    trouble: bool


@dataclass
class _Member:
    cluster: str
    fleet: str
    read: Callable[[], MemberSample]
    scraped: MemberSample | None = None
    scraped_at: float = 0.0


class FleetStore:
    """One world's shared store (module doc); :class:`CapacityAware` owns it."""

    def __init__(
        self,
        loop: EventLoop,
        *,
        scrape_interval: float = SCRAPE_INTERVAL,
        evaluation_interval: float = EVALUATION_INTERVAL,
    ) -> None:
        self.loop = loop
        self.scrape_interval = scrape_interval
        self.evaluation_interval = evaluation_interval
        self._members: list[_Member] = []
        self._rows: dict[tuple[str, str], ClusterRow] = {}
        self._outages: list[tuple[float, float]] = []
        self._started = False
        self.queries = 0
        self.failed_queries = 0

    def join(self, cluster: str, fleet: str, read: Callable[[], MemberSample]) -> None:
        """A scale set's listener becomes a scrape target of its cluster's Prometheus."""
        self._members.append(_Member(cluster, fleet, read))
        if not self._started:
            self._started = True
            self.loop.call_soon(self._scrape)
            self.loop.call_later(self.evaluation_interval, self._evaluate)

    def down(self, start: float, end: float) -> None:
        """The store is down (no scrape, no evaluation, every query fails) in [start, end),
        virtual seconds since the loop's start."""
        if end <= start:
            raise ValueError(f"fleet store outage: end {end} must be after start {start}")
        self._outages.append((self.loop.start + start, self.loop.start + end))

    def is_down(self, now: float) -> bool:
        return any(start <= now < end for start, end in self._outages)

    def query(self, fleet: str) -> FleetView:
        """What a query API answers now: the fleet's rows, or an error while down."""
        self.queries += 1
        if self.is_down(self.loop.now()):
            self.failed_queries += 1
            return FleetView(error="connect: fleet store unreachable")
        return FleetView(rows=tuple(r for (f, _), r in sorted(self._rows.items()) if f == fleet))

    def _scrape(self) -> None:
        now = self.loop.now()
        if not self.is_down(now):
            for member in self._members:
                member.scraped, member.scraped_at = member.read(), now
        self.loop.call_later(self.scrape_interval, self._scrape)

    def _evaluate(self) -> None:
        now = self.loop.now()
        if not self.is_down(now):
            rows: dict[tuple[str, str], list[MemberSample]] = {}
            for m in self._members:
                if m.scraped is not None and now - m.scraped_at <= LOOKBACK:
                    rows.setdefault((m.fleet, m.cluster), []).append(m.scraped)
            self._rows = {
                key: ClusterRow(
                    cluster=key[1],
                    sampled_at=now,
                    free_slots=float(sum(s.free_slots for s in samples)),
                    in_flight=float(sum(s.in_flight for s in samples)),
                    queued=float(max(s.queued for s in samples)),
                    trouble=1.0 if any(s.trouble for s in samples) else 0.0,
                )
                for key, samples in rows.items()
            }
        self.loop.call_later(self.evaluation_interval, self._evaluate)
