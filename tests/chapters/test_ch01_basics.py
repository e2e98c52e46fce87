"""Chapter 01 alone: x's autograd state after grad_of and hessian_vector_product is read in a way the submission
cannot redirect.

torch.Tensor is a Python class: a submission can put properties on it that report a tensor's requires_grad and
.grad as they were before its call. On d532b0b the harness read x's state through those, so code that left
requires_grad on, or overwrote x.grad, kept the points. Its cases are graded in tests/chapters/test_every_chapter.py.
"""

from __future__ import annotations

from pathlib import Path

from tests.kit import by_name, grade_fast, solved

CH = "01_basics"

# Properties on torch.Tensor that report what a tensor held when remember() saw it, and False for requires_grad of
# the tensors returned.
LIES = """
_base = torch._C.TensorBase
_rg, _grad = _base.__dict__["requires_grad"], _base.__dict__["grad"]
_before, _returned = {}, set()

def remember(*xs):  # the caller's inputs of this call only: ids of freed tensors are used again
    _before.clear()
    _returned.clear()
    for x in xs:
        _before[id(x)] = (_rg.__get__(x), _grad.__get__(x))

def returned(t):
    _returned.add(id(t))
    return t

def _requires_grad(t):
    if id(t) in _returned:
        return False
    return _before[id(t)][0] if id(t) in _before else _rg.__get__(t)

def _get_grad(t):
    return _before[id(t)][1] if id(t) in _before else _grad.__get__(t)

torch.Tensor.requires_grad = property(_requires_grad, lambda t, v: _rg.__set__(t, v))
torch.Tensor.grad = property(_get_grad, lambda t, v: _grad.__set__(t, v), lambda t: _grad.__delete__(t))
"""

GRAD_OF = LIES + """
def grad_of(fn, x):
    inputs = x if isinstance(x, tuple) else (x,)
    remember(*inputs)
    for t in inputs:
        t.requires_grad_(True)
        t.grad = None
    fn(*inputs).backward()
    grads = tuple(torch.zeros_like(t) if _grad.__get__(t) is None else _grad.__get__(t) for t in inputs)
    return grads if isinstance(x, tuple) else grads[0]
"""

HVP = LIES + """
def hessian_vector_product(fn, x, v):
    remember(x)
    x.requires_grad_(True)
    x.grad = None
    (g,) = torch.autograd.grad(fn(x), x, create_graph=True)
    (g * v).sum().backward(create_graph=True)
    return returned(_grad.__get__(x))
"""


def test_state_reported_by_patched_tensor_properties_earns_nothing(tmp_path: Path) -> None:
    path = solved(tmp_path, CH, grad_of=GRAD_OF, hessian_vector_product=HVP)
    checks = ["check_grad_of_keeps_requires_grad", "check_grad_of_leaves_x_grad_alone", "check_hvp_leaves_x_alone"]
    results = by_name(grade_fast(path, only=" or ".join(checks)))
    assert {name: results[name].score for name in checks} == dict.fromkeys(checks, 0), [
        results[name].output for name in checks]
