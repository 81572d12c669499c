"""``arc-capacity-listener verify``: prove the placeholder ladder on the user's own cluster.

The start-up checks of ``run`` read configuration; ``verify`` also *exercises* the cluster
with short-lived probe pods of its own, so that admission policies, quotas, a scheduler
profile without preemption or a missing node autoscaler show up before production does.

Modules, one job each:

- :mod:`.report`: the rows (PASS/FAIL/SKIP), the text table, the JSON object, the exit code;
- :mod:`.cluster`: where the scale set lives, its capacityAware block, the API as an
  ``ObjectSource`` (bounded requests only);
- :mod:`.reads`: everything ``run`` checks at start, plus the hook template, LimitRanges,
  ResourceQuotas, server-side dry-run creates and the listener's permissions;
- :mod:`.limits`: what a LimitRange or ResourceQuota would change or refuse (pure);
- :mod:`.room`: a node's free room with the scheduler's arithmetic (pure);
- :mod:`.shapes`: the probe pods (placeholders, runner- and workflow-shaped pods, fillers);
- :mod:`.probe`: the probe's owner, its labels, creating and deleting what verify made;
- :mod:`.judge`: the product's own judgement of a probe pair (sync, ready timeout, ledger);
- :mod:`.exercises`: the exercises, in order;
- :mod:`.cli`: arguments, credentials, cleanup on every exit path.
"""
