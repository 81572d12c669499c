from e2e.runner import main

raise SystemExit(main())
