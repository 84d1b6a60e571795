"""Learning from live traffic: UBI query and click logging, interleaved comparison of fusions, and
judgments from clicks.

The pure core (no I/O, no client): :mod:`.interleave` (team-draft interleaving, click credit, the sign
test), :mod:`.clicks` (COEC judgments), :mod:`.ubi` (the UBI 1.0 records, mappings and schemas),
:mod:`.report` (joining records and events into outcomes and click-model input), :mod:`.simulate`
(users who click by a labelled set). The shell: :mod:`.store` (the ``ubi_queries`` / ``ubi_events``
indices through the port), :mod:`.logger` (the background writer, :class:`~.logger.UbiLogger`), and
:mod:`.experiment` (:class:`~.experiment.Interleaver` over a Searcher).

Imports nothing heavy here: ``from adapter.traffic.logger import UbiLogger``.
"""
