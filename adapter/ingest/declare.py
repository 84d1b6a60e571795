"""Declaring the metadata keys a batch brings and the index's strict metadata mapping lacks, before
anything is sent (:mod:`adapter.index.metadata`). A document whose keys the mapping cannot take
(over the total-fields or depth limit, a name the server refuses) fails alone with the server's
reason, and the others' keys are declared: one such row used to sink its whole batch."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from adapter.engines import Cluster
from adapter.errors import BackendError
from adapter.index import metadata as metadata_mapping
from adapter.ingest.admission import Admitted, Doc
from adapter.ingest.report import FailureSource


class MetadataDeclarer:
    """The metadata keys one index's mapping has, kept as an ingest declares more."""

    def __init__(self, cluster: Cluster, index: str, declared: Mapping[str, Any], *, strict: bool) -> None:
        self.cluster, self.index, self.strict = cluster, index, strict
        self.declared = dict(declared)

    def declare(self, admitted: Admitted) -> Admitted:
        """``admitted`` with the documents whose keys the mapping refused moved to its failures."""
        if not self.strict or not admitted.docs:
            return admitted  # an index made before metadata was strict maps new keys itself, per row
        refused = self._declare_docs(admitted.docs)
        return admitted.refusing(refused, FailureSource.MAPPING) if refused else admitted

    def _declare_docs(self, docs: Sequence[Doc]) -> dict[str, str]:
        """Declare what ``docs`` bring; when the server refuses it (400), halve them until the documents it refuses
        are found, alone. Returns the refused documents' ids and reasons."""
        index = self.index
        added = metadata_mapping.undeclared(self.declared, (d.entries[0].metadata for d in docs))
        if not added:
            return {}
        keys = sorted(added)
        try:
            self.cluster.put_mapping(
                index,
                metadata_mapping.put_body(added),
                action=f"declaring metadata {', '.join(keys[:5])}{', ...' if len(keys) > 5 else ''} in {index}",
            )
        except BackendError as exc:
            if exc.status != 400:
                return {}  # not the rows' doing: they are sent, and the server answers for each of them
            if len(docs) == 1:
                return {
                    docs[
                        0
                    ].id: f"the index's mapping cannot take this row's metadata ({len(keys)} new keys): {exc.reason}"
                }
            half = len(docs) // 2
            return {**self._declare_docs(docs[:half]), **self._declare_docs(docs[half:])}
        self.declared = metadata_mapping.merge(self.declared, added)
        return {}
