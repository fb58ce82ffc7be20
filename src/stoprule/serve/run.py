"""Start the service: uvicorn with N worker processes (each compiles the pack and holds its own
engine handles and ledger connection). uvicorn's supervisor restarts a worker that dies."""

from __future__ import annotations

import json
import os

from stoprule.serve.app import ENV_CONFIG
from stoprule.serve.config import ServeConfig

__all__ = ["serve"]


def serve(config: ServeConfig, *, host: str, port: int, workers: int, log_level: str = "warning") -> None:
    """Run until interrupted. The config reaches the workers as JSON in the environment."""
    import uvicorn

    os.environ[ENV_CONFIG] = json.dumps(config.to_env())
    uvicorn.run(
        "stoprule.serve.app:from_environment",
        factory=True,
        host=host,
        port=port,
        workers=workers if workers > 1 else None,
        log_level=log_level,
        access_log=False,
        timeout_keep_alive=30,
        server_header=False,
        proxy_headers=True,
    )
