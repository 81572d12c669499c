"""A default executor whose worker threads never hold the exit.

``asyncio.run`` joins the default executor at the end (``shutdown_default_executor``), and the
interpreter joins every ``ThreadPoolExecutor`` worker again at exit. A blocking Kubernetes
call in a worker (a Lease renewal, a reconcile step) that waits out its timeouts against an
API that does not answer would then hold a SIGTERM'd process past its exit budget. Here the
workers are daemon threads, the executor is not registered for the interpreter's exit join,
and ``shutdown`` does not wait: what is still blocked is abandoned with the process. Every
such call is idempotent or fenced on the Lease (providers/kubernetes/write/lane.py), so abandoning
it is
safe.
"""

from __future__ import annotations

import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures.thread import _worker  # the pool's own worker loop
from typing import cast


class DaemonThreadPoolExecutor(ThreadPoolExecutor):
    def _adjust_thread_count(self) -> None:
        # Same as the standard pool, minus the registration for the exit join.
        if self._idle_semaphore.acquire(timeout=0):
            return

        def weakref_cb(_: object, q: object = self._work_queue) -> None:
            q.put(None)  # type: ignore[attr-defined]

        count = len(self._threads)
        if count < self._max_workers:
            thread = threading.Thread(
                name=f"{self._thread_name_prefix or 'pool'}_{count}",
                target=_worker,
                args=(
                    weakref.ref(self, weakref_cb),
                    self._work_queue,
                    self._initializer,
                    self._initargs,
                ),
                daemon=True,
            )
            thread.start()
            cast(set[threading.Thread], self._threads).add(thread)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        super().shutdown(wait=False, cancel_futures=True)


__all__ = ["DaemonThreadPoolExecutor"]
