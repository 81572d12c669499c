"""``python -m listener.observability.metrics [--check]``: write (or check) docs/metrics.md."""

from listener.observability.metrics.doc import main

raise SystemExit(main())
