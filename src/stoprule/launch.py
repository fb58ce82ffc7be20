"""The command as ``stoprule init`` wires it: ``PYTHON -I -S .../stoprule/launch.py ARGS``
(:mod:`stoprule._util.launcher`). On the cold path, run as a file and so compiled at every
start: keep it short."""

import os
import sys

_here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _here not in sys.path:
    sys.path.append(_here)  # the folder holding the package (-S: no site)
if __name__ == "__main__":
    from stoprule._util.launcher import start

    start()
    from stoprule.cli.main import main

    raise SystemExit(main())
