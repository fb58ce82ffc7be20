"""The command as ``stoprule init`` wires it: ``PYTHON -I -S .../stoprule/launch.py ARGS``
(:mod:`stoprule._util.launcher`). On the cold path, run as a file and so compiled at every
start: keep it short."""

import sys
from posix import getcwd  # os's, without importing os (stoprule._util.oslite)

_file = __file__ if __file__.startswith("/") else f"{getcwd()}/{__file__}"
if "//" in _file or any(part in (".", "..") for part in _file.split("/")):  # not as init writes it
    from posixpath import normpath  # (imports os: only a start by such a path pays it)

    _file = normpath(_file)
_here = _file.rsplit("/", 2)[0]  # .../stoprule/launch.py
if _here not in sys.path:
    sys.path.append(_here)  # the folder holding the package (-S: no site)
if __name__ == "__main__":
    from stoprule._util.launcher import start

    start()
    from stoprule.cli.main import main

    raise SystemExit(main())
