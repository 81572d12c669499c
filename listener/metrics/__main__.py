"""``python -m listener.metrics [--check]``: write (or check) docs/metrics.md."""

from listener.metrics.doc import main

raise SystemExit(main())
