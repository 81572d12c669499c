"""The listener: a drop-in for ARC's ``ghalistener``, capacity-aware when configured.

``__main__.py`` is the command line (``arc-capacity-listener`` / ``python -m listener``); the
rest is split by concern: ``process/`` (the running process: phases, shutdown, the assembly of
a scale set's runtime), ``arc/`` (ARC's listener protocol: config, long poll, gate, scaler),
``commands/`` (``rbac``, ``values``, ``status``, ``verify``) and ``observability/`` (metrics,
HTTP probes, logs). Outside I/O is in ``providers/``.
"""
