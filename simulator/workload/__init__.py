"""The WORKLOAD half of the simulated world (docs/design.md#simulator).

- :mod:`.jobs`       job arrivals: Poisson streams with a rate schedule, bursts, CSV traces.
- :mod:`.actions`    the Actions service: queue, per-scale-set capacity, assignment, runners,
                     statistics and wire job messages (the ``JobFeed`` the HTTP face serves).
- :mod:`.hud`        the HUD queued-jobs feed (per runner label), with outages.
- :mod:`.arc`        ARC: EphemeralRunnerSet / EphemeralRunner controllers, runner pods, the
                     runner process and the container hook (workflow pod, prepare-job timeout).
- :mod:`.listener`   the ARC listener in-process: long poll, acquire, ERS scaling
                     (docs/protocol.md#listener-loop, docs/protocol.md#scaler).
- :mod:`.pods`       one store subscription per cluster that routes pod events by name and
                     logs ``pod_created``.
- :mod:`.metrics`    the simulator's own accounting of the results.json figures.

The cluster half (scheduler, kubelet, Karpenter) lives in ``simulator.cluster``.
"""
