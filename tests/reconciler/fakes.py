"""A real in-memory fake of the placeholder writer (records calls; no expectations)."""

from __future__ import annotations

from collections.abc import Sequence

from reconciler.ports import PairSpec, PodRef


class FakeWriter:
    def __init__(self, fail_creates: bool = False) -> None:
        self.created: list[PairSpec] = []
        self.deleted: list[PodRef] = []
        self.renewed: list[tuple[tuple[PodRef, ...], float]] = []
        self.fail_creates = fail_creates

    def create_pair(self, spec: PairSpec) -> None:
        if self.fail_creates:
            raise RuntimeError("apiserver said 500")
        self.created.append(spec)

    def delete_pods(self, pods: Sequence[PodRef]) -> None:
        self.deleted.extend(pods)

    def renew_lease(self, pods: Sequence[PodRef], expires_at: float) -> None:
        self.renewed.append((tuple(pods), expires_at))
