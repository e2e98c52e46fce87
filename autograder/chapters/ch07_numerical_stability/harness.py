"""Kit code for 07_numerical_stability, run in the student's process beside the answer cells.

softmax_cross_entropy is graded with the kit's softmax in place of the student's
while it runs, so that code calling `softmax` loses points for a softmax bug in
the softmax task only.
"""

from typing import Any

import torch


def _reference_softmax(logits: torch.Tensor, dim: int = -1) -> torch.Tensor:
    return torch.softmax(logits, dim)


def xent(*args: Any, **kwargs: Any) -> Any:
    """The student's softmax_cross_entropy(*args, **kwargs), with `softmax` the kit's during the call."""
    namespace = globals()["student"]  # the child puts the student's namespace here
    if not callable(namespace.get("softmax_cross_entropy")):
        raise NameError("`softmax_cross_entropy` is not defined: its answer cell must define it (see the notes "
                        "above the checks)")
    had, saved = "softmax" in namespace, namespace.get("softmax")
    namespace["softmax"] = _reference_softmax
    try:
        return namespace["softmax_cross_entropy"](*args, **kwargs)
    finally:
        if had:
            namespace["softmax"] = saved
        else:
            del namespace["softmax"]


def log_softmax_graph(logits: torch.Tensor, dim: int = -1) -> dict[str, Any]:
    """What the graph of the student's log_softmax(logits, dim) holds: every tensor its nodes saved, the
    names of its nodes between the output and the input, and whether one is a custom autograd.Function."""
    namespace = globals()["student"]
    if not callable(namespace.get("log_softmax")):
        raise NameError("`log_softmax` is not defined: its answer cell must define it")
    x = logits.detach().clone().requires_grad_(True)
    saved: list[torch.Tensor] = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        saved.append(t.detach().clone())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = namespace["log_softmax"](x, dim)
    if not isinstance(out, torch.Tensor):
        return {"output_type": type(out).__name__, "saved": saved, "nodes": [], "custom": False}
    nodes: list[str] = []
    custom, todo, seen = False, [out.grad_fn], set()
    while todo and len(nodes) < 200:
        node = todo.pop()
        if node is None or id(node) in seen or type(node).__name__ == "AccumulateGrad":
            continue
        seen.add(id(node))
        nodes.append(type(node).__name__)
        custom = custom or isinstance(node, torch.autograd.function.BackwardCFunction)
        todo.extend(next_node for next_node, _ in node.next_functions)
    return {"output_type": "Tensor", "saved": saved, "nodes": nodes, "custom": custom}
