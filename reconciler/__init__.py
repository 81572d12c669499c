"""The sync-then-decide reconciler (Ray autoscaler v2 style).

Read in this order: ``snapshot`` (what we observe), ``sync`` (passive transitions),
``decide`` (active transitions), ``capacity`` (the ledger), ``reconciler`` (one step),
``subscribers`` (side effects), ``loop`` (when steps run).
"""
