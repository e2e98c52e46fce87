"""Chapter 04: each named wrong implementation (declared in autograder/course/selftest_cases.py, which the
self-test shares) loses points on the checks written to catch it, each message with its phrase.
The reference solution and the release are graded in tests/chapters/test_chapters.py."""

from __future__ import annotations

import pytest

from autograder.course import selftest
from autograder.course.selftest_cases import Mutant, mutants, solution_cells
from tests.chapters.test_chapters import grader

CH = "04_overloaded_ops"


@pytest.mark.parametrize("mutant", mutants(CH), ids=lambda m: m.name)
def test_wrong_implementation_loses_points_where_expected(mutant: Mutant) -> None:
    row = selftest.mutant_row(mutant, "cpu", grader)
    assert row.ok, row.detail


# The stretch's other correct forms: each earns the whole bonus.
# A correct Dual written with isinstance branches, constants kept as plain tensors
BRANCHES = '''
class Dual:
    def __init__(self, value, tangent):
        self.value = value
        self.tangent = tangent

    def _parts(self, other):
        if isinstance(other, Dual):
            return other.value, other.tangent
        return other, None

    def __add__(self, other):
        v, t = self._parts(other)
        value = self.value + v
        tangent = self.tangent + t if t is not None else self.tangent
        return Dual(value, tangent.expand(value.shape) if isinstance(value, torch.Tensor) else tangent)

    def __radd__(self, other):
        return self + other

    def __neg__(self):
        return Dual(-self.value, -self.tangent)

    def __sub__(self, other):
        return self + (-other if not isinstance(other, Dual) else -other)

    def __rsub__(self, other):
        return (-self) + other

    def __mul__(self, other):
        v, t = self._parts(other)
        tangent = self.tangent * v if t is None else self.tangent * v + self.value * t
        value = self.value * v
        return Dual(value, tangent.expand(value.shape))

    def __rmul__(self, other):
        return self * other

    def __truediv__(self, other):
        v, t = self._parts(other)
        if t is None:
            return self * (1 / v)
        return Dual(self.value / v, (self.tangent * v - self.value * t) / (v * v))

    def __rtruediv__(self, other):
        inv = Dual(1 / self.value, -self.tangent / self.value ** 2)
        return inv * other

    def __matmul__(self, other):
        v, t = self._parts(other)
        tangent = self.tangent @ v if t is None else self.tangent @ v + self.value @ t
        return Dual(self.value @ v, tangent)

    def __rmatmul__(self, other):
        return Dual(other @ self.value, other @ self.tangent)

    def __pow__(self, p):
        return Dual(self.value ** p, p * self.value ** (p - 1) * self.tangent)
'''
# A correct Dual through broadcast_tensors and a table of rules
TABLE = '''
def _const(x, like):
    x = torch.as_tensor(x, dtype=like.dtype, device=like.device)
    return x, torch.zeros_like(x)

class Dual:
    def __init__(self, value, tangent):
        self.value, self.tangent = value, tangent

    def _binary(self, other, rule, swap=False):
        if isinstance(other, Dual):
            ov, ot = other.value, other.tangent
        elif isinstance(other, (int, float, torch.Tensor)):
            ov, ot = _const(other, self.value)
        else:
            return NotImplemented
        (a, da), (b, db) = ((ov, ot), (self.value, self.tangent)) if swap else ((self.value, self.tangent), (ov, ot))
        value, tangent = rule(a, da, b, db)
        if tangent.shape != value.shape:
            tangent = torch.broadcast_tensors(tangent, value)[0]
        return Dual(value, tangent)

    def __add__(self, o): return self._binary(o, lambda a, da, b, db: (a + b, da + db))
    def __radd__(self, o): return self._binary(o, lambda a, da, b, db: (a + b, da + db), swap=True)
    def __sub__(self, o): return self._binary(o, lambda a, da, b, db: (a - b, da - db))
    def __rsub__(self, o): return self._binary(o, lambda a, da, b, db: (a - b, da - db), swap=True)
    def __mul__(self, o): return self._binary(o, lambda a, da, b, db: (a * b, da * b + a * db))
    def __rmul__(self, o): return self._binary(o, lambda a, da, b, db: (a * b, da * b + a * db), swap=True)
    def __truediv__(self, o): return self._binary(o, lambda a, da, b, db: (a / b, da / b - a * db / b ** 2))
    def __rtruediv__(self, o):
        return self._binary(o, lambda a, da, b, db: (a / b, da / b - a * db / b ** 2), swap=True)
    def __matmul__(self, o): return self._binary(o, lambda a, da, b, db: (a @ b, da @ b + a @ db))
    def __rmatmul__(self, o): return self._binary(o, lambda a, da, b, db: (a @ b, da @ b + a @ db), swap=True)
    def __neg__(self): return Dual(-self.value, -self.tangent)
    def __pow__(self, p): return Dual(self.value ** p, p * self.value ** (p - 1) * self.tangent)
'''
DUAL_FORMS = {"isinstance branches": BRANCHES, "rule table with broadcast_tensors": TABLE}


@pytest.mark.parametrize("form", DUAL_FORMS)
def test_every_correct_form_of_the_stretch_earns_its_bonus(form: str) -> None:
    g = selftest._graded(grader, CH, {**solution_cells(CH), "Dual": DUAL_FORMS[form]}, "cpu", "dual")
    assert not isinstance(g, str), g
    assert (g.score, g.bonus, g.bonus_max) == (0.0, 5.0, 5.0), [r.output for r in g.results if r.status != "passed"]
