"""kube-scheduler's Score phase for a pod with preferred node affinity.

The framework runs each Score plugin on every feasible node, normalizes each plugin's scores
to 0-100 (``MaxNodeScore``), multiplies them by the plugin's weight in the profile and sums
them per node (``RunScorePlugins`` in pkg/scheduler/framework/runtime/framework.go); the node
with the highest sum wins. The default profile weighs NodeAffinity 2 and NodeResourcesFit 1
(pkg/scheduler/apis/config/v1/default_plugins.go).

* NodeAffinity (pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go): the raw score
  is the sum of the weights of the preferred terms a node matches
  (:meth:`.Placement.preference_score`); NormalizeScore is
  ``DefaultNormalizeScore(MaxNodeScore, reverse=false)``
  (pkg/scheduler/framework/plugins/helper/normalize_score.go): ``100 * raw // max`` over the
  feasible nodes, all 0 when no node matches a term. Its PreScore skips pods without
  preferred terms, so for them only NodeResourcesFit counts: :mod:`.scheduler` keeps its
  plain loop for those (nearly all pods) and calls :func:`best_preferred` only for the others.
* NodeResourcesFit: the scheduler's fit score, the sum over cpu and memory of the requested
  (MostAllocated) or free (LeastAllocated) fraction after placing the pod, 0-2 with equal
  weights; the plugin's 0-100 score is their mean x 100, i.e. :data:`FIT_SCALE` x that sum.

The other default Score plugins (TaintToleration, PodTopologySpread, InterPodAffinity,
NodeResourcesBalancedAllocation, ImageLocality) are not modelled, as for pods without
preferences.
"""

from __future__ import annotations

from collections.abc import Sequence

from simulator.cluster.infos import NodeInfo
from simulator.cluster.matching import Placement

MAX_NODE_SCORE = 100
NODE_AFFINITY_WEIGHT = 2
FIT_WEIGHT = 1
#: The scheduler's fit score (two fractions summed, 0-2) to the plugin's 0-100 score.
FIT_SCALE = MAX_NODE_SCORE / 2


def best_preferred(placement: Placement, scored: Sequence[tuple[NodeInfo, float]]) -> NodeInfo:
    """The feasible node with the highest weighted sum of NodeAffinity and NodeResourcesFit.

    ``scored`` holds every feasible node (in name order) with its fit score on the
    scheduler's 0-2 scale; it must not be empty. Ties go to the first node (upstream picks at
    random among them; the simulation needs determinism)."""
    raw = [placement.preference_score(node.labels, node.name) for node, _fit in scored]
    top = max(raw)
    best, best_total = scored[0][0], float("-inf")
    for (node, fit), r in zip(scored, raw, strict=True):
        affinity = MAX_NODE_SCORE * r // top if top else 0  # integer, as DefaultNormalizeScore
        total = FIT_WEIGHT * FIT_SCALE * fit + NODE_AFFINITY_WEIGHT * affinity
        if total > best_total:
            best, best_total = node, total
    return best
