"""The immutable picture of the cluster a cycle reads (`picture`), and the facts of it that
need no decision: pod shapes, node predicates, resources, GPU devices and their counts.
Built by `phalanx.core.parse`; read by every later stage, changed by none."""
