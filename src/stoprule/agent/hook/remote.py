"""The client of ``stoprule serve``: the hook and ``eval`` ask a server instead of deciding here.

Plain ``http.client`` (no third-party import on the hook's path). Every call has a timeout; a
server that is unreachable, slow, refuses the token or answers something else is a
:class:`RemoteError`, which the hook turns into its configured fail mode (open or closed) with a
notice. The bearer token comes from an environment variable (``server.token_env``, default
``STOPRULE_SERVER_TOKEN``), never from a file in the project.

``.stoprule/config.yaml``::

    server:
      url: https://stoprule.internal.example   # or `stoprule hook HARNESS --server URL`
      token_env: STOPRULE_SERVER_TOKEN
      timeout_ms: 2000                          # per request; the hook's budget_ms bounds it too
      record: true                              # the server records each stop (run = the session id)
      project: web-app                          # how the team's blocker list names this project

On the cold path when the project asks a decision server (tools/import_graph.py, COLD_PATH_WHEN): its imports
stay few, light and lazy.
"""

from __future__ import annotations

import json

from stoprule import codes
from stoprule.diagnostics import AgentError
from stoprule.project import CONFIG_FILE, STATE_DIR

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = [
    "DEFAULT_TOKEN_ENV",
    "Mirror",
    "Remote",
    "RemoteError",
    "attach_mirror",
    "ndjson_chunks",
    "project_remote",
]

DEFAULT_TOKEN_ENV = "STOPRULE_SERVER_TOKEN"


class RemoteError(AgentError):
    """The server could not be asked, or refused: ``code`` is the server's error code or ``server.*``."""

    def __init__(self, code: str, message: str, status: int = 0, body: Any = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code, self.message, self.status, self.body = code, message, status, body


class Remote:
    """A server at ``url`` (http or https) with a bearer token and a per-request timeout (seconds)."""

    def __init__(self, url: str, token: str | None, timeout: float) -> None:
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise RemoteError(codes.SERVER_BAD_URL, f"{url!r} is not an http:// or https:// URL")
        self.url = url.rstrip("/")
        self._https = parts.scheme == "https"
        self._host, self._port = parts.hostname, parts.port
        self._base = parts.path.rstrip("/")
        self._token = token
        self.timeout = timeout

    @classmethod
    def configured(
        cls, section: Mapping[str, Any] | None, explicit: str | None, env: Mapping[str, str], budget: float | None
    ) -> Remote | None:
        """The server the flag or the config's ``server:`` section names (None: decide locally)."""
        section = section or {}
        url = explicit or section.get("url") or env.get("STOPRULE_SERVER")
        if not url:
            return None
        token = env.get(section.get("token_env") or DEFAULT_TOKEN_ENV)
        timeout = (section.get("timeout_ms") or 2000) / 1000.0
        if budget is not None:
            timeout = min(timeout, budget)
        return cls(url, token, timeout)

    def request(
        self, method: str, path: str, body: bytes | None = None, ctype: str = "application/json"
    ) -> tuple[int, dict[str, str], bytes]:  # noqa: E501
        import http.client

        conn_type = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        conn = conn_type(self._host, self._port, timeout=self.timeout)
        headers = {"content-type": ctype, "accept": "application/json"}
        if self._token:
            headers["authorization"] = f"Bearer {self._token}"
        try:
            conn.request(method, self._base + path, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
        except TimeoutError:
            raise RemoteError(codes.SERVER_TIMEOUT, f"{self.url} did not answer within {self.timeout:g}s") from None
        except (OSError, http.client.HTTPException) as exc:
            raise RemoteError(codes.SERVER_UNREACHABLE, f"{self.url}: {type(exc).__name__}: {exc}") from None
        finally:
            conn.close()

    def call(self, method: str, path: str, body: bytes | None = None, ctype: str = "application/json") -> Any:
        """A JSON answer; RemoteError for any status but 200 (the server's own error code when it gives one)."""
        status, _, data = self.request(method, path, body, ctype)
        try:
            value = json.loads(data)
        except ValueError:
            raise RemoteError(codes.SERVER_BAD_ANSWER, f"{self.url}{path}: HTTP {status}, not JSON", status) from None
        if status != 200:
            err = value.get("error") if isinstance(value, dict) else None
            if isinstance(err, dict) and "code" in err:
                raise RemoteError(str(err["code"]), str(err.get("message", "")), status, value)
            raise RemoteError(codes.SERVER_BAD_ANSWER, f"{self.url}{path}: HTTP {status}", status, value)
        return value

    def hook(
        self, harness: str, payload: dict[str, Any], fact: dict[str, Any], event: str | None, run: str | None
    ) -> dict[str, Any]:
        """The server's answer for one stop: ``output``, ``decision``, ``verdict`` (envelope), ``policy``."""
        body = {"payload": payload, "fact": fact, "event": event, "run": run}
        answer = self.call("POST", f"/v1/hooks/{harness}", json.dumps(body).encode())
        if not isinstance(answer, dict) or not isinstance(answer.get("verdict"), dict):
            raise RemoteError(codes.SERVER_BAD_ANSWER, f"{self.url}: the hook answer has no verdict")
        return answer

    def batch(self, data: bytes, query: str = "") -> tuple[int, bytes]:
        """NDJSON facts to ``/v1/evaluate/batch``: the status and the NDJSON answer."""
        status, _, body = self.request("POST", "/v1/evaluate/batch" + query, data, "application/x-ndjson")
        return status, body


CHUNK_FACTS = 2000  # facts per batch request from a client: well under the server's default limits
CHUNK_BYTES = 256 * 1024  # (max_batch 10,000 facts, max_body_bytes 1 MiB)


def ndjson_chunks(data: bytes, facts: int = CHUNK_FACTS, size: int = CHUNK_BYTES) -> list[tuple[int, bytes]]:
    """``data`` cut at line boundaries into requests of at most ``facts`` lines and about ``size``
    bytes, each with the number of its first line. One piece when it is small, or when it is one
    multi-line JSON document (its first non-blank line is no JSON value on its own): that cannot be cut."""
    lines = data.split(b"\n")
    if len(data) <= size and len(lines) <= facts:
        return [(1, data)]
    try:
        json.loads(next(ln for ln in lines if ln.strip()))
    except ValueError:
        return [(1, data)]
    out, start, count, nbytes = [], 0, 0, 0
    for i, line in enumerate(lines):
        if count and (count >= facts or nbytes + len(line) > size):
            out.append((start + 1, b"\n".join(lines[start:i])))
            start, count, nbytes = i, 0, 0
        count += bool(line.strip())
        nbytes += len(line) + 1
    out.append((start + 1, b"\n".join(lines[start:])))
    return out


class Mirror:
    """Copies a project's blockers (the whole list, after each change) and its blocked reports to
    the server, so that ``stoprule blockers list --server URL`` shows the team's. A server that
    cannot be reached costs a line on stderr, never the local write. Blockers the server says were
    resolved there (in the team's console) are resolved here too, with who resolved them."""

    def __init__(self, remote: Remote, project: str) -> None:
        import socket

        self.remote, self.project, self.machine = remote, project, socket.gethostname()

    def __call__(self, service: Any, kind: str, item: dict[str, Any]) -> None:
        import sys

        items = [b.to_dict() for b in service.store.blockers()] if kind == "blocker" else [item]
        body = {"project": self.project, "machine": self.machine, "items": items}
        try:
            answer = self.remote.call("PUT", f"/v1/{kind}s", json.dumps(body).encode())
        except RemoteError as exc:
            sys.stderr.write(f"stoprule: could not copy the {kind} to {self.remote.url}: {exc}\n")
            return
        resolved = answer.get("resolved") if isinstance(answer, dict) else None
        for b in resolved if kind == "blocker" and isinstance(resolved, list) else []:
            if isinstance(b, dict) and isinstance(b.get("id"), str):
                from stoprule._util.redact import redact
                from stoprule._util.text import clean

                note = f"resolved in the team console by {b.get('resolved_by') or '?'}"
                note += f": {b['resolution']}" if isinstance(b.get("resolution"), str) and b["resolution"] else ""
                service.store.resolve(b["id"], redact(clean(note))[:2000])


def project_remote(project_dir: str, explicit: str | None, env: Mapping[str, str]) -> tuple[Remote | None, str]:
    """The server a project's config (or ``explicit``/``$STOPRULE_SERVER``) names, and the project's name
    (``server.project``, else the project directory's name)."""
    import os

    from stoprule.config.reader import read_settings

    data = read_settings(os.path.join(project_dir, STATE_DIR, CONFIG_FILE)).server
    return Remote.configured(data, explicit, env, None), data.get("project") or os.path.basename(project_dir)


def attach_mirror(service: Any, explicit: str | None = None, env: Mapping[str, str] | None = None) -> None:
    """Give a blocker service the project's team server (flag, config ``server:``, ``$STOPRULE_SERVER``),
    if one is configured: its blockers and reports are then copied there after each change."""
    import os

    remote, name = project_remote(service.project_dir, explicit, os.environ if env is None else env)
    if remote is not None:
        service.mirror = Mirror(remote, name)
