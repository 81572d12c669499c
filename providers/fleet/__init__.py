"""The fleet view: this cluster's peers' capacity, read from a shared metric store.

- :mod:`providers.fleet.prometheus`: one read of the view through a Prometheus-compatible
  HTTP query API (Prometheus, Thanos Query, Mimir), bounded in time and attempts.
- :mod:`providers.fleet.share`: the latest view as this cluster's share of its fleet, applied
  to the combined demand; stale or unreachable means no share (the listener acts alone).
"""
