"""``hybrid serve``: a small ASGI app (Starlette, run by uvicorn) that keeps the embedder loaded.

- :mod:`.params`: what a request may ask for, parsed and capped (pure);
- :mod:`.service`: the warm, read-only searcher behind the requests;
- :mod:`.app`: the routes (the compare page, ``/search``, ``/api/compare``, ``/api/info``, the report).

Needs the ``serve`` extra (starlette, uvicorn, Jinja2).
"""

from adapter.serve.app import create_app
from adapter.serve.params import Config, Limits
from adapter.serve.service import SearchService, engine_notes

__all__ = ["Config", "Limits", "SearchService", "create_app", "engine_notes"]
