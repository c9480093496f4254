"""`python -m evalgate` runs the command line."""

from evalgate.cli import main

raise SystemExit(main())
