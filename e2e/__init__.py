"""The shipped listener under the real control plane: upstream kube-apiserver,
kube-controller-manager, kube-scheduler, etcd, kwok, Karpenter's kwok provider and ARC's
gha-runner-scale-set controller, built from pinned Go modules (e2e/upstream/), started on
loopback, with the Actions face as GitHub and a runner double in the runner pods.

Modules: :mod:`.components` (the pins), :mod:`.build` (``python -m e2e.build``),
:mod:`.pki`, :mod:`.processes`, :mod:`.control_plane`, :mod:`.platform` (CRDs, Karpenter,
ARC), :mod:`.scale_set` (the install and the scale set), :mod:`.runner_double`,
:mod:`.observe` (the independent checker), :mod:`.world`, :mod:`.scenarios`, :mod:`.runner`
(``python -m e2e``), :mod:`.report`, :mod:`.versions`. docs/e2e-real.md says how to run it.
"""
