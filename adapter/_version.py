"""The adapter's version: the installed distribution's (pyproject.toml), which `hybrid --version` prints.

Its own module, so code below the public API (the User-Agent, the tracer's name) reads it without importing the
package's ``__init__``, which reaches every layer."""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _dist_version

try:
    __version__ = _dist_version("opensearch-hybrid-adapter")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"
