"""``hybrid serve``: a small ASGI app (FastAPI on Starlette, run by uvicorn) that keeps the embedder loaded.

- :mod:`.params`: what a request may ask for, parsed and capped (pure);
- :mod:`.schema`: the request models (pydantic): types checked at the door, and the OpenAPI document;
- :mod:`.service`: the warm, read-only searcher behind the requests;
- :mod:`.runner`, :mod:`.admission`, :mod:`.vectors`: searches off the event loop, a bounded queue, a
  deadline per request, query vectors cached and embedded in batches; :mod:`.deadlines`: that deadline
  over the cluster client's tries;
- :mod:`.lean`: the hot routes (``POST /search``) answered ahead of FastAPI's per-request machinery;
- :mod:`.door`, :mod:`.metrics`: hosts, token, JSON-only POST, security headers; ``/metrics``;
- :mod:`.traffic`: ``--ubi`` (a UBI record per search, ``POST /events``) and ``--interleave``;
- :mod:`.app`: the routes; :mod:`.server`: uvicorn with header and keep-alive timeouts, workers, SIGTERM.

Needs the ``serve`` extra (fastapi, uvicorn, Jinja2, prometheus-client).
"""

from adapter.serve.app import create_app
from adapter.serve.door import Security
from adapter.serve.params import Config, Limits
from adapter.serve.runner import Ops
from adapter.serve.service import SearchService, engine_notes

__all__ = ["Config", "Limits", "Ops", "SearchService", "Security", "create_app", "engine_notes"]
