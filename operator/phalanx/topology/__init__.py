"""Topology: NetworkTopology levels and the static domain tree built from node labels.

Pure: no I/O. `phalanx.topology.summary` reports the tree with capacities for a snapshot.
"""

from phalanx.topology.spec import TopologyLevel, TopologySpec
from phalanx.topology.tree import DomainTree, build_tree, tree_for

__all__ = ["DomainTree", "TopologyLevel", "TopologySpec", "build_tree", "tree_for"]
