"""The sync-then-decide reconciler (Ray autoscaler v2 style). No I/O: time, observations and
settings come in as arguments, effects go out as data.

Read in this order:

1. :mod:`.snapshot`: what one step observes (pods, demand, fit estimate), as values.
2. :mod:`.sync`: passive transitions the snapshot proves.
3. :mod:`.decide`: active transitions and commands (its input and output in
   :mod:`.decision`), with :mod:`.sizing` (how many pairs), :mod:`.survivors` (lone halves),
   :mod:`.unblock` (half-placed pairs), :mod:`.sweep` (adoption and orphans), :mod:`.ramp`
   (how many pairs to request now) and :mod:`.warm_pool` (the warm pool size).
4. :mod:`.capacity`: the ledger, what may be advertised.
5. :mod:`.reconciler`: one step (the pure :func:`~reconciler.reconciler.reconcile` and the
   store that commits it).
6. :mod:`.controller`: the only engine the listener and the simulator drive: when to step
   (:mod:`.schedule`), fail-closed, the drop guard, and the ``Output`` to carry out.
7. :mod:`.subscribers`: the side effects of an ``Output`` (placeholder writes, logs), behind
   the interfaces in :mod:`.ports`.

Settings: :mod:`.config` (the frozen :class:`~reconciler.config.ReconcilerConfig` the core
reads, no pydantic) and, at the edge, :mod:`.settings` (with :mod:`.settings_types` and
:mod:`.demand_settings`) that validates and builds it; time: :mod:`.clock`. Hot slots (idle
runners with a workflow placeholder): :mod:`.hot_slots` (the pure decisions) and
:mod:`.hot_step` (the keeper the step runs). The drivers are
``listener/process/reconcile_loop.py`` (asyncio) and ``simulator/driver/capacity_aware.py``
(virtual time);
both carry an ``Output`` out with ``scaleset/carry_out.py``.
"""
