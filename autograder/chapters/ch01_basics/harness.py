"""Harness for 01_basics: runs grad_of on functions built here, in the student's process.

Functions cannot cross the wire, so a check names one from FUNCTIONS and sends
its weight `w` (same shape as `x`), or one from SEVERAL with a tuple of inputs.
`grad_of` sets up the autograd state of each input (requires_grad and a stale
.grad), calls the student's grad_of and returns that state: .grad itself, which
the judge compares with the tensor it sent, and requires_grad. The judge
recomputes every gradient itself.

torch.Tensor is a Python class, so student code can put properties on it that
report another requires_grad or .grad. The state is read here through the C
type's own descriptors, taken before any student code runs (that type cannot be
changed), so such properties change nothing that is returned.
"""

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

student: dict[str, Any] = globals()["student"]  # the student's namespace, bound by the child

# Taken before any student code runs: TensorBase is an immutable C type, unlike torch.Tensor.
_TENSOR = torch._C.TensorBase
_REQUIRES_GRAD = _TENSOR.__dict__["requires_grad"].__get__
_SET_REQUIRES_GRAD = _TENSOR.requires_grad_
_GRAD = _TENSOR.__dict__["grad"].__get__
_SET_GRAD = _TENSOR.__dict__["grad"].__set__


def _prepared(x: torch.Tensor, requires_grad: bool, grad: torch.Tensor | None) -> torch.Tensor:
    """A fresh copy of x with the autograd state a check asks for."""
    x = x.detach().clone()
    if grad is not None:
        _SET_GRAD(x, grad.clone())
    _SET_REQUIRES_GRAD(x, requires_grad)
    return x


# name -> f(x, w), a scalar function of x; the judge holds its own copy of this table.
FUNCTIONS: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "neg_square": lambda x, w: -(x * x).sum(),
    "sum_of_squares": lambda x, w: (x * x).sum(),
    "sin_dot": lambda x, w: (w * torch.sin(x)).sum(),
    "logsumexp": lambda x, w: torch.logsumexp(x.reshape(-1), 0),
    "cube_mean": lambda x, w: (x**3).mean(),
    "softplus_dot": lambda x, w: (w * F.softplus(x)).sum(),
    "norm_of_tanh": lambda x, w: torch.linalg.vector_norm(torch.tanh(x) * w),
    "row_logsumexp": lambda x, w: torch.logsumexp(x * w, dim=-1).sum(),
    # for hessian_vector_product: w is an [n, n] matrix here
    "quadratic_form": lambda x, w: 0.5 * x @ (w @ x),
    # gradients that do not depend on x (the Hessian is 0), or only partly
    "linear_dot": lambda x, w: (w * x).sum(),
    "scaled_sum": lambda x, w: 3 * x.sum(),
    "relu_dot": lambda x, w: (w * torch.relu(x)).sum(),
    "first_squared_plus_linear": lambda x, w: x.reshape(-1)[0] ** 2 + (w * x).sum(),
}


# name -> f(*inputs), a scalar function of several tensors, for grad_of on a tuple; some leave inputs unused.
SEVERAL: dict[str, Callable[..., torch.Tensor]] = {
    "product": lambda a, b: (a * b).sum(),
    "one_input": lambda a: (a * a).sum(),
    "sin_times_plus_square": lambda a, b, c: (torch.sin(a) * b).sum() + (c * c).sum(),
    "logsumexp_matvec": lambda m, v: torch.logsumexp(m @ v, 0),
    "mixed_dtypes": lambda a, b: (a.to(b.dtype) ** 2).sum() * b.mean(),
    "second_unused": lambda a, b: (a * a).sum(),
    "only_middle_used": lambda a, b, c: torch.tanh(b).sum(),
    "first_unused_float64": lambda a, b: torch.logsumexp(b, 0),
}


def grad_of(name: str, x: torch.Tensor | tuple[torch.Tensor, ...], w: torch.Tensor,
            requires_grad: bool | tuple[bool, ...] = False,
            grad: torch.Tensor | tuple[torch.Tensor | None, ...] | None = None) -> dict[str, Any]:
    """The student's grad_of(FUNCTIONS[name], x), or grad_of(SEVERAL[name], inputs) for a tuple x, with each
    input's state set up; returns the state after the call (a tuple of states for a tuple x)."""
    if "grad_of" not in student:
        raise NameError("`grad_of` is not defined: keep the name and signature of the stub in its answer cell")
    if isinstance(x, tuple):
        flags = requires_grad if isinstance(requires_grad, tuple) else (requires_grad,) * len(x)
        grads = grad if isinstance(grad, tuple) else (grad,) * len(x)
        xs = tuple(_prepared(t, r, g) for t, r, g in zip(x, flags, grads, strict=True))
        result = student["grad_of"](SEVERAL[name], xs)
        return {"grad": result, "requires_grad": tuple(bool(_REQUIRES_GRAD(t)) for t in xs),
                "x_grad": tuple(_GRAD(t) for t in xs)}
    fn = FUNCTIONS[name]
    x = _prepared(x, bool(requires_grad), grad if not isinstance(grad, tuple) else None)
    result = student["grad_of"](lambda t: fn(t, w), x)
    return {"grad": result, "requires_grad": bool(_REQUIRES_GRAD(x)), "x_grad": _GRAD(x)}


def hessian_vector_product(name: str, x: torch.Tensor, w: torch.Tensor, v: torch.Tensor, requires_grad: bool = False,
                           grad: torch.Tensor | None = None) -> dict[str, Any]:
    """The student's hessian_vector_product(FUNCTIONS[name], x, v) with x's state set up; the state after it."""
    if "hessian_vector_product" not in student:
        raise NameError("`hessian_vector_product` is not defined: keep the name and signature of the stub in its "
                        "answer cell")
    fn = FUNCTIONS[name]
    x = _prepared(x, requires_grad, grad)
    result = student["hessian_vector_product"](lambda t: fn(t, w), x, v)
    return {"hvp": result, "requires_grad": bool(_REQUIRES_GRAD(x)), "x_grad": _GRAD(x),
            "hvp_requires_grad": isinstance(result, _TENSOR) and bool(_REQUIRES_GRAD(result))}
