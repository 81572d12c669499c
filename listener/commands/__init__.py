"""The operator commands besides ``run``: ``rbac``, ``values`` (with the chart's values schema,
``chart_values.py``, and the container-hook merge, ``hook_merge.py``), ``status`` and
``verify`` (``verify/``)."""
