"""Why a gang was not placed, in numbers a user can act on.

Exclusions are counted per node while looking, then formatted once into one sorted
sentence ("0/64 nodes are available: 40 Insufficient nvidia.com/gpu, ..."), the way
kube-scheduler reports a FitError.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from operator import ge, not_

from phalanx.core.admission.members import Problem
from phalanx.core.model.device_share import DEVICE
from phalanx.core.model.names import GPU, GPU_MEMORY_LABEL
from phalanx.core.model.status import Exclusion, Reason, StatusCode
from phalanx.core.placement.gang import GangRequest
from phalanx.core.placement.state import CycleState
from phalanx.core.placement.static_room import static_room, static_takes
from phalanx.core.snapshot.devices import part_of
from phalanx.core.snapshot.index import UNLIMITED_PODS
from phalanx.core.snapshot.predicates import tolerated, unmatchable
from phalanx.core.snapshot.resources import format_amount, format_resources
from phalanx.core.snapshot.shapes import Shape, fit_count
from phalanx.topology.tree import ROOT, DomainTree

HELD = "node(s) were held for another group"


def node_histogram(state: CycleState, shape: Shape) -> str:
    """'A/N nodes are available: <count> <cause>, ...' for one pod shape. A node that takes
    no such pod is counted under its static exclusion, else a hold, else every resource
    it lacks (and too many pods); a fractional pod's node with all of them, under why its
    devices refuse. Counted once a cycle per shape from `OpenNodes`, then kept current
    from the nodes changed since (`CycleState.changed`): a placement changes a node or
    two, and each one made every waiting shape's first wait message after it count all
    the nodes again (286 times in a late Alibaba simulator cycle, a sixth of it)."""
    node = None if state.fits_nowhere(shape) else state.shape(shape).node  # None: no node
    key = ("histogram", shape)
    known = state.kept.get(key)
    if isinstance(known, _Histogram):
        known.catch_up(state, shape, node)
    else:
        known = state.kept[key] = _Histogram.count(state, shape, node)
    parts = [
        f"{n} {cause}"
        for cause, n in sorted(known.causes.items(), key=lambda c: (-c[1], c[0]))
        if n
    ]
    total = len(state.index.nodes)
    detail = ": " + ", ".join(parts) if parts else ""
    return f"{total - known.zeros}/{total} nodes are available{detail}."


def _counted_causes(state: CycleState, shape: Shape, node: list[int] | None) -> Counter[str]:
    """Every node's causes of `node_histogram` at once, in C where it can be."""
    opened = state.open_nodes(shape.constraints)
    causes: Counter[str] = Counter({cause.value: n for cause, n in opened.excluded.items()})
    if causes.pop(Exclusion.TAINT.value, 0):
        causes.update(_taint_causes(state, shape))
    causes[HELD] = opened.held
    causes[Exclusion.TOO_MANY_PODS.value] = opened.too_many_pods
    for name, amount in shape.requests:
        causes[f"Insufficient {name}"] += opened.short(state, name, amount)
    if shape.fractional:
        left = opened.nodes
        if node is not None:
            left = list(compress(left, map(not_, map(node.__getitem__, left))))
        for name, amount in shape.requests:
            column = state.column(name)
            left = list(compress(left, map(ge, map(column.__getitem__, left), repeat(amount))))
        causes.update(_device_causes(state, shape, left))
    return causes


def _taint_causes(state: CycleState, shape: Shape) -> Counter[str]:
    """The nodes kept off by a taint the pod does not tolerate, by the first such taint
    of each, named as kube-scheduler names it ("node(s) had untolerated taint {key:
    value}"), so the user sees which toleration is missing. A static exclusion: counted
    once, never caught up (`_Histogram.catch_up` skips such nodes)."""
    tolerations = shape.constraints.tolerations
    nodes = state.index.nodes
    causes: Counter[str] = Counter()
    for i, cause in enumerate(state.static(shape.constraints)):
        if cause is Exclusion.TAINT:
            taint = next(t for t in nodes[i].taints if not tolerated(tolerations, t))
            causes[f"{Exclusion.TAINT.value} {{{taint.key}: {taint.value}}}"] += 1
    return causes


_NodeCounted = tuple[int, int, int, tuple[int, ...]]
"""What a node's causes were counted from: its holds, pod slots, pods of the shape it
takes, and free amount of each requested resource."""


@dataclass(slots=True)
class _Histogram:
    """`node_histogram`'s counts (`causes`, and `zeros`: nodes that take no such pod) as
    of `seen` entries of `CycleState.changed`, with what each node was counted from, so
    a changed node's old causes can be taken out and its new ones put in: the columns
    as they were when counted (tuples of ints, which the garbage collector stops
    tracking; lists of them were traversed at every collection), and `since` for the
    nodes changed since."""

    seen: int
    causes: Counter[str]
    zeros: int
    held: tuple[int, ...]
    pods_free: tuple[int, ...]
    counts: tuple[int, ...]
    free: tuple[tuple[int, ...], ...]
    since: dict[int, _NodeCounted]

    @staticmethod
    def count(state: CycleState, shape: Shape, node: list[int] | None) -> _Histogram:
        counts = tuple(node) if node is not None else (0,) * len(state.index.nodes)
        return _Histogram(
            seen=len(state.changed),
            causes=_counted_causes(state, shape, node),
            zeros=counts.count(0),
            held=tuple(state.held),
            pods_free=tuple(state.pods_free),
            counts=counts,
            free=tuple(tuple(state.column(name)) for name, _ in shape.requests),
            since={},
        )

    def catch_up(self, state: CycleState, shape: Shape, node: list[int] | None) -> None:
        """Recount the nodes changed since `seen` (`node` None: the shape fits nowhere,
        as if every node took none, which `fits_nowhere` proves)."""
        static = state.static(shape.constraints)
        columns = [state.column(name) for name, _ in shape.requests]
        for i in set(state.changed[self.seen :]):
            if static[i] is not None:  # counted under it, whatever changes
                continue
            old = self.since.get(i)
            if old is None:
                old = (self.held[i], self.pods_free[i], self.counts[i],
                       tuple([free[i] for free in self.free]))  # fmt: skip
            new = (state.held[i], state.pods_free[i], node[i] if node is not None else 0,
                   tuple([column[i] for column in columns]))  # fmt: skip
            self.since[i] = new
            self.zeros += (not new[2]) - (not old[2])
            self.causes.subtract(_node_causes(state, shape, i, old))
            self.causes.update(_node_causes(state, shape, i, new))
        self.seen = len(state.changed)


def _node_causes(state: CycleState, shape: Shape, node: int, counted: _NodeCounted) -> list[str]:
    """What one node without a static exclusion adds to `node_histogram`, from what it
    is counted from: the same causes `_counted_causes` counts for it."""
    held, pods_free, count, free = counted
    if held:
        return [HELD]
    causes = [Exclusion.TOO_MANY_PODS.value] if pods_free <= 0 else []
    short = False
    for (name, amount), available in zip(shape.requests, free, strict=True):
        if available < amount:
            causes.append(f"Insufficient {name}")
            short = True
    if shape.fractional and not count and not short:
        causes.append(_no_device(state, shape, node))
    return causes


def explain(state: CycleState, request: GangRequest) -> Problem:
    """The reason for a gang that `place_gang` could not place."""
    demand = dict(request.demand)
    shapes = sorted(demand, key=lambda s: s.size_key)
    for shape in shapes:
        need = demand[shape]
        nowhere = state.fits_nowhere(shape)  # then its counts are never built
        room = 0 if nowhere else state.domain_counts(shape, request.topology)[ROOT]
        if room < need:
            never = not static_takes(state, shape, need)
            message = (
                f"needs {_pods(need, shape)}; {room} fit in the cluster. "
                f"{node_histogram(state, shape)}"
            )
            split = fragmentation(state, shape)
            message += f" {split}." if split else ""
            message += _unmatchable(shape) + _absent_labels(state, shape)
            message += _beyond_any_node(state, shape) if never else ""
            code = StatusCode.UNRESOLVABLE if never else StatusCode.UNSCHEDULABLE
            return Problem(code, Reason.INSUFFICIENT_RESOURCES, message)
    if request.limit >= 0:
        return _no_domain(state, request, shapes[0], demand[shapes[0]])
    joined = "join the group's running pods" if request.anchors else "fit together"
    message = f"the {len(request.pods)} pods fit one by one but do not {joined}"
    if request.sub_group is not None:
        size, level = request.sub_group
        level_name = state.tree(request.topology).levels[level]
        message += f" with every {size} pods within one {level_name}"
    return Problem(StatusCode.UNSCHEDULABLE, Reason.NO_DOMAIN_FITS, message)


def _no_domain(state: CycleState, request: GangRequest, shape: Shape, need: int) -> Problem:
    tree = state.tree(request.topology)
    level = request.limit
    level_name = tree.levels[level]
    best = state.best_at_level(shape, request.topology, level)
    gpu = dict(shape.requests).get(GPU, 0)
    if gpu:
        free = _usable_gpus(state, shape, tree, best.domain)
        wanted = f"{format_amount(GPU, gpu * need)} GPUs ({need} pods)"
        offer = f"has {format_amount(GPU, free)} GPUs free, room for {best.count} pods"
    else:
        wanted = _pods(need, shape)
        offer = f"has room for {best.count} pods"
    best_name = tree.name(best.domain)
    message = f"needs {wanted} within one {level_name}; best {level_name} {best_name} {offer}"
    if request.anchors:
        message += " (new pods must join the group's running pods)"
    never = not request.anchors and _never_fits(state, shape, tree, request, need)
    if never:
        message += f"; no {level_name} could hold it even if empty"
    split = fragmentation(state, shape)
    message += f"; {split}" if split else ""
    if tree.missing[level]:
        message += (
            f"; {tree.missing[level]} of {len(state.index.nodes)} nodes have no "
            f"{level_name} label and are in no {level_name}"
        )
    code = StatusCode.UNRESOLVABLE if never else StatusCode.UNSCHEDULABLE
    return Problem(code, Reason.NO_DOMAIN_FITS, message)


def _never_fits(
    state: CycleState, shape: Shape, tree: DomainTree, request: GangRequest, need: int
) -> bool:
    """Could no domain of the limit level hold the gang even if all its nodes were free?
    First a bound from node counts and the largest node, then the exact count."""
    level = [d for d in tree.by_level[request.limit] if tree.labelled[d]]
    per_node = fit_count(state.index.max_allocatable, UNLIMITED_PODS, shape.requests)
    if max((tree.node_counts[d] for d in level), default=0) * per_node < need:
        return True
    room = static_room(state, shape, request.topology)
    return all(room[d] < need for d in level)


def _unmatchable(shape: Shape) -> str:
    """A sentence naming the node-affinity requirements no node can match, or ""."""
    found = unmatchable(shape.constraints)
    if not found:
        return ""
    return (f" Node affinity {', '.join(found)} matches no node: Gt and Lt take exactly "
            "one integer value.")


def _absent_labels(state: CycleState, shape: Shape) -> str:
    """A sentence naming the nodeSelector's labels that no node carries, or "": most often
    a typo or a model the cluster lacks, which "didn't match Pod's node selector" alone
    leaves the user to find (`ClusterIndex.label_pairs`)."""
    selector = shape.constraints.node_selector
    if not selector:
        return ""
    pairs = state.index.label_pairs
    absent = [f"{key}={value}" for key, value in selector if (key, value) not in pairs]
    if not absent:
        return ""
    plural = "s" if len(absent) > 1 else ""
    return f" No node has the label{plural} {', '.join(absent)} that its nodeSelector asks for."


def _beyond_any_node(state: CycleState, shape: Shape) -> str:
    """A sentence naming what one pod asks beyond the largest node's allocatable, or "":
    such a pod waits for ever however the cluster empties (16 GPUs asked of 8-GPU nodes,
    a resource no node offers), which the counted "Insufficient" alone does not say."""
    largest = state.index.max_allocatable
    over = [
        f"{format_amount(name, amount)} {name} (the most a node has is "
        f"{format_amount(name, largest.get(name, 0))})"
        for name, amount in shape.requests
        if amount > largest.get(name, 0)
    ]
    if not over:
        return ""
    return f" No node could take one such pod even if empty: it asks for {', '.join(over)}."



def _pods(count: int, shape: Shape) -> str:
    asked = format_resources(dict(shape.requests))
    if shape.gpu_milli:
        asked = f"{shape.gpu_milli / DEVICE:g} of a GPU, {asked}"
    elif shape.gpu_memory:
        asked = f"{shape.gpu_memory} MiB of one GPU's memory, {asked}"
    return f"{count} pod{'' if count == 1 else 's'} of {asked}"


def _device_causes(state: CycleState, shape: Shape, left: list[int]) -> Counter[str]:
    """`_no_device` of each node in `left`, counted per kind of node (it depends on the
    node's GPU count and, for a request of GPU memory, that memory alone), in C."""
    nodes = state.index.nodes
    kinds: Sequence[object] = (
        [(n.gpu_count, n.gpu_memory) for n in nodes] if shape.gpu_memory
        else state.index.gpu_counts
    )  # fmt: skip
    causes: Counter[str] = Counter()
    for kind, count in Counter(map(kinds.__getitem__, left)).items():
        node = next(i for i in left if kinds[i] == kind)
        causes[_no_device(state, shape, node)] += count
    return causes


def _no_device(state: CycleState, shape: Shape, node: int) -> str:
    """Why a node with room for a fractional pod's cpu and memory takes none."""
    info = state.index.nodes[node]
    if not info.gpu_count:
        return f"Insufficient {GPU}"
    if shape.gpu_memory and not info.gpu_memory:
        return f"node(s) had no {GPU_MEMORY_LABEL} label"
    part = part_of(shape.gpu_milli, shape.gpu_memory, info)
    if part > DEVICE:
        return "node(s) had GPUs with less memory than asked"
    return "node(s) had no GPU with that much free"


def fragmentation(state: CycleState, shape: Shape) -> str:
    """Names the nodes that would take a whole-GPU pod of this shape if the fractions on
    them were packed onto fewer GPUs (their free GPUs are split into parts of shared
    GPUs): "" when there are none, so the sentence appears only when fragmentation is
    why the pod waits there."""
    per_pod = dict(shape.requests).get(GPU, 0)
    if not per_pod:
        return ""
    key = ("fragmentation", per_pod, shape.constraints)  # all the sentence depends on
    known = state.sentences.get(key)
    if known is not None and known[0] == state.generation:
        return known[1]
    sentence = _fragmentation(state, shape, per_pod)
    state.sentences[key] = (state.generation, sentence)
    return sentence


def _fragmentation(state: CycleState, shape: Shape, per_pod: int) -> str:
    nodes = _split_nodes(state, shape, per_pod)
    if not nodes:
        return ""
    whole = sum(free for free, _ in nodes.values())
    idle = sum(free for _, free in nodes.values())
    return (
        f"{len(nodes)} node(s) have {format_amount(GPU, idle)} GPUs free but only "
        f"{format_amount(GPU, whole)} whole: the rest are parts of GPUs shared by fractional "
        f"pods (each pod needs {format_amount(GPU, per_pod)} whole)"
    )


@dataclass(slots=True)
class _Split:
    """`_split_nodes` as of `seen` entries of `CycleState.changed`."""

    seen: int
    nodes: dict[int, tuple[int, int]]


def _split_nodes(state: CycleState, shape: Shape, per_pod: int) -> dict[int, tuple[int, int]]:
    """The nodes where parts of shared GPUs would make room for a whole-GPU pod of
    `per_pod`, each with (whole GPU milli free, all GPU milli free). Found once a cycle
    among the nodes with shared devices (elsewhere no device has spare parts), then kept
    current from the nodes changed since: a scan per placement, of a thousand shared
    nodes, was a twentieth of a busy simulator cycle."""
    key = ("split", per_pod, shape.constraints)
    known = state.kept.get(key)
    if isinstance(known, _Split):
        changed: Iterable[int] = set(state.changed[known.seen :])
    else:
        known = _Split(0, {})
        state.kept[key] = known
        changed = state.shared_nodes()
    known.seen = len(state.changed)
    static, nodes = state.static(shape.constraints), known.nodes
    for i in changed:
        free = max(0, state.free[i].get(GPU, 0))
        spare = state.fragment_free(i) if free < per_pod and static[i] is None else 0
        if spare and (free + spare) // DEVICE * DEVICE >= per_pod:
            nodes[i] = (free, free + spare)
        else:
            nodes.pop(i, None)
    return nodes


def _usable_gpus(state: CycleState, shape: Shape, tree: DomainTree, domain: int) -> int:
    """Free GPUs (milli) in the domain on nodes a pod of this shape may use."""
    static = state.static(shape.constraints)
    return sum(
        max(0, state.free[i].get(GPU, 0)) for i in tree.nodes_in(domain) if static[i] is None
    )
