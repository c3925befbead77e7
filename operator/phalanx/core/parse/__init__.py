"""Parsing Kubernetes objects (dicts as the API server returns them) into core types."""

from phalanx.core.model.errors import InvalidObject
from phalanx.core.parse.group import parse_pod_group
from phalanx.core.parse.node import parse_node
from phalanx.core.parse.objects import flatten, snapshot_from_objects
from phalanx.core.parse.pod import parse_pod
from phalanx.core.parse.queue import parse_queue
from phalanx.core.parse.topology import parse_network_topology, parse_priority_class

__all__ = [
    "InvalidObject",
    "flatten",
    "parse_network_topology",
    "parse_node",
    "parse_pod",
    "parse_pod_group",
    "parse_priority_class",
    "parse_queue",
    "snapshot_from_objects",
]
