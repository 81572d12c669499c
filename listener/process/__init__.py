"""The listener process: what ``arc-capacity-listener run`` starts and stops.

Its phases and ordered shutdown (``app.py``), the start-up decisions (``startup.py``), the
``capacityAware`` block's loading (``capacity_config.py``), the one assembly of a scale set's
runtime (``assembly.py``), the capacity-aware side the process starts once the session is open
(``capacity_side.py``), the asyncio driver of the controller (``reconcile_loop.py``), and what
keeps the exit prompt (``supervise.py``, ``exit_deadline.py``, ``daemon_executor.py``).
"""
