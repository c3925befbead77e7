"""Label and annotation keys a simulated GPU node carries, as real clusters set them.

GPU Feature Discovery sets the `nvidia.com/gpu.*` labels, NVIDIA topograph the
`network.topology.nvidia.com/*` ones; kwok manages nodes that carry its annotation.
"""

from __future__ import annotations

from phalanx.core.model.names import GPU, HOSTNAME_LABEL

HOSTNAME = HOSTNAME_LABEL
GPU_RESOURCE = GPU
GPU_COUNT = "nvidia.com/gpu.count"
GPU_PRODUCT = "nvidia.com/gpu.product"
GPU_MEMORY = "nvidia.com/gpu.memory"
GPU_PRESENT = "nvidia.com/gpu.present"
GPU_CLIQUE = "nvidia.com/gpu.clique"
TOPOLOGY_CORE = "network.topology.nvidia.com/core"
TOPOLOGY_SPINE = "network.topology.nvidia.com/spine"
TOPOLOGY_LEAF = "network.topology.nvidia.com/leaf"

KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
KWOK_NODE_VALUE = "fake"
KWOK_TYPE_LABEL = "type"
KWOK_TYPE_VALUE = "kwok"

# A pod with this annotation (a whole number of seconds) is driven to Succeeded by kwok
# that many seconds after it started running; see phalanx.cluster.kwok_config.
COMPLETE_AFTER_ANNOTATION = "sim.phalanx.io/complete-after-seconds"
FAIL_AFTER_ANNOTATION = "sim.phalanx.io/fail-after-seconds"
# A pod being deleted stays Terminating while it carries this annotation (a kubelet that has
# not stopped its containers yet); removing it lets kwok delete the pod. Tests use it to see a
# pod between the start of its deletion and its end (e.g. a victim of preemption).
HOLD_TERMINATION_ANNOTATION = "sim.phalanx.io/hold-termination"
