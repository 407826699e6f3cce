"""Memory planning: intermediate tensors whose lifetimes do not overlap share device memory.

Runs on a built GraphIR, ahead of time. A tensor lives from the op that writes
it to the last op that reads it (inclusive at both ends, so an op's inputs and
outputs never share). Views (ops whose registry entry says `aliases_input`)
share their input's storage in the runtime, so a view's output and input form
one alias group whose lifetime is the union of its members'. Groups holding a
graph input, a graph output, a constant or state (a KV cache, which an
in-place update aliases) are never shared.

Groups are packed into shared objects greedily by size, largest first: each
goes into an object whose groups' lifetimes it does not overlap (the object is
sized to its largest member by the runtime), else into a new object. Of the
objects that fit, it takes the one whose lifetimes end or start farthest from
its own, so that the runtime can overlap dispatches (see _first_fit).
"""

from dataclasses import dataclass, field, replace
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..serialization.graph_ir import GraphIR, TensorValue, ValueListValue


@dataclass
class _Group:
    members: List[int]
    nbytes: int
    first: int
    last: int
    shareable: bool = True


@dataclass
class MemoryPlan:
    # Planned value id -> shared object id.
    assignment: Dict[int, int] = field(default_factory=dict)
    num_objects: int = 0
    # Bytes of the shared objects, and of their alias groups without sharing.
    planned_bytes: int = 0
    unshared_bytes: int = 0


def plan_memory(graph: GraphIR, aliases_input: Callable[[str], bool],
                state_updates: Callable[[str], Sequence[Tuple[int, int]]] = lambda name: ()) -> MemoryPlan:
    """Assigns a mem_obj_id to every shareable intermediate tensor of graph, in place.

    aliases_input(op_name) says whether the runtime makes the op's output a view
    of its first argument; state_updates(op_name) lists the (argument position,
    output index) pairs of the state an op updates in place (op_registry.state_update_positions).
    """
    plan = _make_plan(graph, aliases_input, state_updates)
    for value_id, object_id in plan.assignment.items():
        graph.values[value_id] = replace(graph.values[value_id], mem_obj_id=object_id)
    graph.num_mem_objs = plan.num_objects
    return plan


def _make_plan(graph: GraphIR, aliases_input: Callable[[str], bool],
               state_updates: Callable[[str], Sequence[Tuple[int, int]]]) -> MemoryPlan:
    def is_tensor(value_id: int) -> bool:
        return isinstance(graph.values[value_id], TensorValue)

    def tensors_of(call_args) -> List[int]:
        """The tensor ids among an op's args, including those inside lists (Tensor[] arguments)."""
        ids = []
        for value_id in call_args:
            value = graph.values[value_id]
            if isinstance(value, ValueListValue):
                ids += [item for item in value.items if is_tensor(item)]
            elif isinstance(value, TensorValue):
                ids.append(value_id)
        return ids

    # Alias groups (union-find over value ids).
    parent: Dict[int, int] = {}

    def find(value_id: int) -> int:
        parent.setdefault(value_id, value_id)
        while parent[value_id] != value_id:
            parent[value_id] = parent[parent[value_id]]
            value_id = parent[value_id]
        return value_id

    # Lifetime of each tensor: (first op index, last op index).
    first: Dict[int, int] = {}
    last: Dict[int, int] = {}
    for index, call in enumerate(graph.chain):
        for value_id in tensors_of(call.args):
            first.setdefault(value_id, index)
            last[value_id] = index
        if aliases_input(call.name) and call.args and is_tensor(call.args[0]) and is_tensor(call.args[-1]):
            # A view: its (last) output shares the storage of its first argument.
            # Views keep the dtype; an aliasing op that changes it (_to_copy
            # converting) runs a kernel instead, whose input and output must not share.
            source, view = call.args[0], call.args[-1]
            if graph.values[source].dtype == graph.values[view].dtype:
                parent[find(view)] = find(source)
        # An in-place update's output is its state's storage (ComputeGraph::alias_state).
        outputs = call.args[len(call.args) - call.num_outputs:]
        for position, output in state_updates(call.name):
            parent[find(outputs[output])] = find(call.args[position])

    fixed = set(graph.input_ids) | set(graph.output_ids)
    groups: Dict[int, _Group] = {}
    for value_id in first:
        value = graph.values[value_id]
        root = find(value_id)
        group = groups.get(root)
        if group is None:
            group = groups[root] = _Group([], 0, first[value_id], last[value_id])
        group.members.append(value_id)
        group.first = min(group.first, first[value_id])
        group.last = max(group.last, last[value_id])
        group.nbytes = max(group.nbytes, value.nbytes)
        if value_id in fixed or value.constant_id != -1 or value.state:
            group.shareable = False
    # Members that appear in no op (an input passed straight to an output) are
    # not in `first`; they have their own storage anyway.

    plan = MemoryPlan()
    objects: List[Tuple[int, List[Tuple[int, int]]]] = []  # (size, lifetimes)
    shareable = [group for group in groups.values() if group.shareable]
    shareable.sort(key=lambda group: (-group.nbytes, group.first))
    for group in shareable:
        object_id = _first_fit(objects, group.first, group.last)
        if object_id is None:
            object_id = len(objects)
            objects.append((0, []))
        size, lifetimes = objects[object_id]
        objects[object_id] = (max(size, group.nbytes), lifetimes + [(group.first, group.last)])
        for value_id in group.members:
            plan.assignment[value_id] = object_id
        plan.unshared_bytes += group.nbytes
    plan.num_objects = len(objects)
    plan.planned_bytes = sum(size for size, _ in objects)
    return plan


def _first_fit(objects: List[Tuple[int, List[Tuple[int, int]]]], first: int, last: int) -> Optional[int]:
    # Barrier placement: of the objects that fit, take the one whose other lifetimes
    # lie farthest (in ops) from this one. Reusing memory that the previous op just
    # read makes the next write wait for that read (a write-after-read barrier at
    # runtime), which serializes dispatches that could overlap. The object's size
    # does not change (groups come largest first), so this costs no memory.
    best, best_gap = None, -1
    for object_id, (_, lifetimes) in enumerate(objects):
        if all(last < start or end < first for start, end in lifetimes):
            gap = min((start - last if last < start else first - end for start, end in lifetimes),
                      default=_FAR)
            if min(gap, _FAR) > best_gap:
                best, best_gap = object_id, min(gap, _FAR)
    return best


# Barrier placement: gaps of this many ops or more count as equally far.
_FAR = 16
