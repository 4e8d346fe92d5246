"""A window of a changelog merged into its mirror, exactly once per window.

``request`` (what a merge is asked and learns), ``bound`` (which changelog rows a window
applies, from the changelog's commits as ``tidemark.sinks`` reads them), ``stamps`` (which
windows a mirror holds, from its snapshots), ``columns`` (schema evolution of a mirror),
``lake`` (every step PyIceberg alone takes: stamps, a new mirror, the Arrow merge of
``arrow``), ``spark`` (Spark's ``MERGE INTO``, for what the rest cannot) and ``processes``
(merges in worker processes, one per core).
"""
