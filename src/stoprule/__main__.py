from stoprule.cli.main import main

raise SystemExit(main())
