"""Local Kubernetes control plane for development and tests (etcd, kube-apiserver, kwok).

`description` (pure) turns a cluster description YAML into Node objects and a
NetworkTopology; `local.LocalCluster` runs the control plane and creates them.
"""

from phalanx.cluster.description import (
    ClusterDescription,
    DescriptionError,
    load_description,
    network_topology,
    node_objects,
)
from phalanx.cluster.local import ClusterError, LocalCluster

__all__ = [
    "ClusterDescription",
    "ClusterError",
    "DescriptionError",
    "LocalCluster",
    "load_description",
    "network_topology",
    "node_objects",
]
