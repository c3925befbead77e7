"""Where a job's pods may go, said as the operator would say it.

The Alibaba trace's `gpu_spec` lists the GPU models a pod may use; on a real cluster the
pod says so with required node affinity on GPU Feature Discovery's label
`nvidia.com/gpu.product` (the simulated nodes carry the trace's model there). The core
policies put that affinity on the pods they hand to the core, whose predicates honour
it; kube-default's NodeAffinity filter evaluates the same terms with the same predicate.
"""

from __future__ import annotations

import numpy as np

from phalanx.core.model.inputs import NodeInfo, NodeSelectorRequirement, NodeSelectorTerm
from phalanx.core.model.names import GPU_PRODUCT_LABEL
from phalanx.core.snapshot.predicates import matches_term
from phalanx.sim.model import JobSpec, SimCluster
from phalanx.sim.state import BoolArray


def node_affinity(spec: JobSpec) -> tuple[NodeSelectorTerm, ...]:
    """Required node affinity of the job's pods: `nvidia.com/gpu.product In (models)`."""
    if not spec.gpu_models:
        return ()
    requirement = NodeSelectorRequirement(GPU_PRODUCT_LABEL, "In", spec.gpu_models)
    return (NodeSelectorTerm(match_expressions=(requirement,)),)


class AllowedNodes:
    """Which nodes of the cluster a job's pods may use (by its affinity), one mask per
    distinct affinity, computed once."""

    def __init__(self, cluster: SimCluster) -> None:
        self._nodes = [NodeInfo(n.name, {}, labels=n.labels) for n in cluster.nodes]
        self._all: BoolArray = np.ones(len(self._nodes), dtype=np.bool_)
        self._masks: dict[tuple[NodeSelectorTerm, ...], BoolArray] = {}

    def of(self, spec: JobSpec) -> BoolArray:
        terms = node_affinity(spec)
        if not terms:
            return self._all
        mask = self._masks.get(terms)
        if mask is None:
            matches = [any(matches_term(node, t) for t in terms) for node in self._nodes]
            mask = self._masks[terms] = np.array(matches, dtype=np.bool_)
        return mask
