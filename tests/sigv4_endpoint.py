"""A local stand-in for Amazon OpenSearch Service (``es``) or Serverless (``aoss``) in front of a real node.

It verifies each request's SigV4 signature the way AWS does (botocore's ``SigV4Auth`` recomputes it
from the request and fixed test credentials) under the signed-header rules of AWS's front end:
hop-by-hop headers (``connection``, ``keep-alive``, ...) are dropped before the check, so a signature
over one does not match, and Serverless refuses ``content-length`` among the signed headers
(opensearch-py #1047, #1044). It rejects unsigned and wrongly signed requests with 403,
answers 404 for what Serverless lacks (``GET /``, ``_nodes``, cluster health and stats, scroll), and
proxies the rest to the node. It keeps every request it let through (method, path, JSON body) so
tests can compare what reached "AWS" with and without Serverless.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import urlsplit

ACCESS_KEY = "AKIDTESTEXAMPLE0000"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYTESTEXAMPLE"
REGION = "eu-west-1"
SERVERLESS_LACKS = re.compile(r"^/(_nodes|_cluster/(health|stats|state)|_search/scroll|_cat/nodes)(/|$)")
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
_AUTH = re.compile(
    r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, ?"
    r"SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})"
)


@dataclass
class Seen:
    method: str
    path: str
    body: Any


@dataclass
class SigV4Endpoint:
    """``with SigV4Endpoint(node_url, "aoss") as ep: connect(ep.url, aws_region=REGION, aws_service="aoss")``."""

    upstream: str
    service: str = "aoss"
    # path regex -> (status, JSON body): answers the endpoint gives instead of the node's
    overrides: dict[str, Callable[[str, Any], tuple[int, dict] | None]] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # paths answered 404 because Serverless lacks them
    signed: list[str] = field(default_factory=list)  # the SignedHeaders of every request that carried a signature

    def __enter__(self) -> SigV4Endpoint:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _handle(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                why = endpoint.verify(self.command, self.path, dict(self.headers.items()), body)
                if why:
                    endpoint.rejected.append(why)
                    return self._answer(403, {"message": why})
                path = urlsplit(self.path).path
                if endpoint.service == "aoss" and (path == "/" or SERVERLESS_LACKS.match(path)):
                    endpoint.missing.append(f"{self.command} {path}")
                    return self._answer(404, {"error": "not found"}, server="aoss-amazon")
                parsed = _json(body)
                for pattern, answer in endpoint.overrides.items():
                    if re.search(pattern, path) and (got := answer(self.command, parsed)) is not None:
                        return self._answer(*got)
                endpoint.seen.append(Seen(self.command, self.path, parsed))
                self._proxy(body)

            def _proxy(self, body: bytes):
                headers = {"Content-Type": self.headers.get("Content-Type", "application/json")}
                req = urllib.request.Request(
                    endpoint.upstream.rstrip("/") + self.path, data=body or None, method=self.command, headers=headers
                )
                try:
                    with urllib.request.urlopen(req, timeout=60) as resp:
                        status, payload, ctype = resp.status, resp.read(), resp.headers.get("Content-Type")
                except urllib.error.HTTPError as err:
                    status, payload, ctype = err.code, err.read(), err.headers.get("Content-Type")
                self._raw(status, payload, ctype or "application/json")

            def _answer(self, status: int, data: dict, server: str | None = None):
                self._raw(status, json.dumps(data).encode(), "application/json", server)

            def _raw(self, status: int, payload: bytes, ctype: str, server: str | None = None):
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(payload)))
                if server:
                    self.send_header("server", server)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _handle

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def verify(self, method: str, target: str, headers: dict[str, str], body: bytes) -> str | None:
        """None when the request carries a valid signature for this service; else why not."""
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials

        lower = {k.lower(): v for k, v in headers.items()}
        match = _AUTH.fullmatch(lower.get("authorization", "").strip())
        if not match:
            return "missing or malformed SigV4 Authorization header"
        key, day, region, service, signed, signature = match.groups()
        if (key, region, service) != (ACCESS_KEY, REGION, self.service):
            return f"credential scope {key}/{region}/{service} is not {ACCESS_KEY}/{REGION}/{self.service}"
        stamp = lower.get("x-amz-date", "")
        if not stamp.startswith(day):
            return "X-Amz-Date does not match the credential scope"
        declared = lower.get("x-amz-content-sha256")
        if declared is not None and declared != hashlib.sha256(body).hexdigest():
            return "X-Amz-Content-SHA256 does not match the body"
        if self.service == "aoss" and declared is None:
            return "Serverless requires X-Amz-Content-SHA256"
        names = signed.split(";")
        self.signed.append(signed)
        if "host" not in names:
            return "the host header is not signed"
        if self.service == "aoss" and "content-length" in names:
            return "Serverless does not accept content-length among the signed headers"
        # The front end drops hop-by-hop headers before the check: a signature over one cannot match.
        request = AWSRequest(
            method=method,
            url=f"http://{lower['host']}{target}",
            data=body,
            headers={n: lower[n] for n in names if n in lower and n not in HOP_BY_HOP},
        )
        request.context["timestamp"] = stamp
        auth = SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY), self.service, REGION)
        expected = auth.signature(auth.string_to_sign(request, auth.canonical_request(request)), request)
        return None if hmac.compare_digest(expected, signature) else "the signature does not match"


def _json(body: bytes) -> Any:
    if not body:
        return None
    text = body.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except ValueError:
        return [json.loads(line) for line in text.splitlines() if line.strip()]  # NDJSON (_msearch, _bulk)
