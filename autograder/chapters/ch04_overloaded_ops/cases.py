"""Chapter 04_overloaded_ops: named wrong implementations of its answer cells, and other correct forms.

Each function's body is the code of an answer cell, as a student would write it, or with edits= only what it
changes in the code it edits (autograder/course/cases.py reads and checks it); the imports below are those of
the notebook's imports cell that the code uses.
`python -m autograder selftest` grades the wrong ones, tests/chapters/test_every_chapter.py all of them.
Not shipped to Gradescope (autograder/course/bundle.py).
"""

import torch

from autograder.judging.authoring import cell, right, wrong

# -- row_sum -------------------------------------------------------------------------------------------------------


@wrong("row loop", fails={"check_row_sum_speed": "a loop of torch operations"}, example="ben")
def row_loop():
    def row_sum(x):
        z = torch.zeros_like(x[0])
        for i in range(x.shape[0]):
            z = z + x[i]
        return z


@wrong("numpy row loop", fails={"check_row_sum_speed": "loops in numpy"})
def numpy_row_loop():
    import numpy as np

    def row_sum(x):
        a = x.numpy()
        z = np.zeros(a.shape[1], dtype=a.dtype)
        for i in range(a.shape[0]):
            z += a[i]
        return torch.from_numpy(z)


@wrong("python numbers loop", fails={"check_row_sum_speed": "over Python numbers"})
def python_numbers_loop():
    def row_sum(x):
        z = [0] * x.shape[1]
        for row in x.tolist():
            z = [a + b for a, b in zip(z, row, strict=True)]
        return torch.tensor(z, dtype=x.dtype)


@wrong("column loop", fails={"check_row_sum_speed": "took more than 8x the time of x.sum(dim=0)"})
def column_loop():
    def row_sum(x):
        return torch.stack([x[:, j].sum() for j in range(x.shape[1])])


@wrong("loop over the shorter axis", fails={"check_row_sum_speed": "for i in range(n): a Python loop"})
def loop_over_the_shorter_axis():
    """A loop of as few steps as the matrix allows: one on the timed [32768, 1] and [1, 32768] inputs."""
    def row_sum(x):
        n, d = x.shape
        if n <= d:
            z = torch.zeros_like(x[0])
            for i in range(n):
                z = z + x[i]
            return z
        return torch.stack([x[:, j].sum() for j in range(d)])


@wrong("builtin sum over the shorter axis's unbind",
       fails={"check_row_sum_speed": "sum(x.unbind(0), torch.zeros_like(x[0])): builtin sum"})
def builtin_sum_over_unbind():
    """No loop statement: builtin sum iterates over the rows (or the columns), whichever are fewer."""
    def row_sum(x):
        if x.shape[0] <= x.shape[1]:
            return sum(x.unbind(0), torch.zeros_like(x[0]))
        return torch.stack([c.sum() for c in x.unbind(1)])


@wrong("wrong axis", fails={"check_row_sum_random": "dim=0"})
def wrong_axis():
    def row_sum(x):
        return x.sum(dim=1)


@wrong("view on strided input", fails={"check_row_sum_non_contiguous": "view size"})
def view_on_strided_input():
    def row_sum(x):
        n, d = x.shape
        return x.view(n * d).view(n, d).sum(dim=0)


# -- row_sum: correct forms, which keep the no-loop rule as the judge reads it ---------------------------------------


@right("row_sum: ones @ x", only="check_row_sum", points=4)
def row_sum_ones_matmul():
    def row_sum(x):
        return x.new_ones(x.shape[0]) @ x


@right("row_sum: einsum", only="check_row_sum", points=4)
def row_sum_einsum():
    def row_sum(x):
        return torch.einsum("nd->d", x)


@right("row_sum: transposed, keepdim", only="check_row_sum", points=4)
def row_sum_transposed_keepdim():
    def row_sum(x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x.T, dim=1, keepdim=True).reshape(x.shape[1])


# -- pairwise_sq_distances -----------------------------------------------------------------------------------------


@wrong("distance loop", fails={"check_pairwise_vectorized": "a loop of torch operations"})
def distance_loop():
    def pairwise_sq_distances(x, y):
        return torch.stack([((y - xi) ** 2).sum(dim=1) for xi in x])


@wrong("distance rows in numpy", fails={"check_pairwise_vectorized": "loops in numpy"})
def distance_rows_in_numpy():
    import numpy as np

    def pairwise_sq_distances(x, y):
        a, b = x.detach().numpy(), y.detach().numpy()
        return torch.from_numpy(np.stack([((b - row) ** 2).sum(axis=1) for row in a]))


@wrong("distance loop over y", fails={"check_pairwise_vectorized": "a loop of torch operations"})
def distance_loop_over_y():
    def pairwise_sq_distances(x, y):
        return torch.stack([((x - yj) ** 2).sum(dim=1) for yj in y], dim=1)


@wrong("loop over the smaller cloud", fails={"check_pairwise_vectorized": "for xi in x]: a Python loop"})
def loop_over_the_smaller_cloud():
    """One step per point of the smaller cloud: two on the timed 16384 points against 2."""
    def pairwise_sq_distances(x, y):
        if x.shape[0] <= y.shape[0]:
            return torch.stack([((y - xi) ** 2).sum(dim=1) for xi in x])
        return torch.stack([((x - yj) ** 2).sum(dim=1) for yj in y], dim=1)


@right("pairwise: broadcast difference", only="check_pairwise", points=10)
def pairwise_broadcast():
    def pairwise_sq_distances(x, y):
        return ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)


@right("pairwise: einsum of the difference", only="check_pairwise", points=10)
def pairwise_einsum():
    def pairwise_sq_distances(x, y):
        diff = x.unsqueeze(1) - y.unsqueeze(0)
        return torch.einsum("nmd,nmd->nm", diff, diff)


@wrong("not squared", fails={"check_pairwise_random": "no square root"})
def not_squared():
    def pairwise_sq_distances(x, y):
        return ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1).sqrt()


@wrong("cross term sign", fails={"check_pairwise_small_example": "sign"})
def cross_term_sign():
    def pairwise_sq_distances(x, y):
        return (x ** 2).sum(1, keepdim=True) + (y ** 2).sum(1) + 2 * x @ y.T


@wrong("library cdist", fails={"check_pairwise_vectorized": "it names torch.cdist (line 2)"})
def library_cdist():
    def pairwise_sq_distances(x, y):
        return torch.cdist(x, y) ** 2


@cell("row_sum")
def cdist_imported_beside_row_sum():
    from torch import cdist as d  # noqa: F401 (read by pairwise_sq_distances, another cell)

    def row_sum(x):
        return x.sum(dim=0)


@wrong("library cdist under an alias from another cell", also=[cdist_imported_beside_row_sum],
       fails={"check_pairwise_vectorized": "d (imported as torch.cdist) (line 2)"})
def library_cdist_aliased_elsewhere():
    def pairwise_sq_distances(x, y):
        return d(x, y) ** 2  # noqa: F821


# -- Dual ----------------------------------------------------------------------------------------------------------
# The stretch task (bonus). Each wrong form is the reference Dual with one rule changed: an edit of it.


@wrong("__rsub__ reuses __sub__", fails={"check_dual_constants_on_the_left": "d.__rsub__(c) must compute c - d"},
       edits="Dual")
def rsub_reuses_sub():
    class Dual:
        def __rsub__(self, other):
            o = Dual.lift(other)
            return o if o is NotImplemented else self + (-o)


@wrong("product rule without u w'", fails={"check_dual_polynomial": "(u w)' = u' w + u w'"}, edits="Dual")
def product_rule_without_u_w():
    class Dual:
        def __mul__(self, other):
            o = Dual.lift(other)
            if o is NotImplemented:
                return o
            return Dual.make(self.value * o.value, self.tangent * o.value)


@wrong("quotient rule with a plus", fails={"check_dual_quotients_and_powers": "(u / w)'"}, edits="Dual")
def quotient_rule_with_a_plus():
    class Dual:
        def __truediv__(self, other):
            o = Dual.lift(other)
            if o is NotImplemented:
                return o
            return Dual.make(self.value / o.value, (self.tangent * o.value + self.value * o.tangent) / o.value ** 2)


@wrong("power rule off by one", fails={"check_dual_quotients_and_powers": "(u**p)'"}, edits="Dual")
def power_rule_off_by_one():
    class Dual:
        def __pow__(self, p):
            if not isinstance(p, (int, float)):
                return NotImplemented
            return Dual(self.value ** p, p * self.value ** p * self.tangent)


@wrong("matmul product rule in the wrong order", fails={"check_dual_matrix_products": "matrices do not commute"},
       edits="Dual")
def matmul_product_rule_in_the_wrong_order():
    class Dual:
        def __matmul__(self, other):
            o = Dual.lift(other)
            if o is NotImplemented:
                return o
            return Dual(self.value @ o.value, o.value @ self.tangent + o.tangent @ self.value)


@wrong("__rmatmul__ computes d @ w", fails={"check_dual_matrix_products": "d.__rmatmul__(w)"}, edits="Dual")
def rmatmul_computes_d_w():
    class Dual:
        def __rmatmul__(self, other):
            o = Dual.lift(other)
            return o if o is NotImplemented else self @ o


@wrong("tangent not broadcast", fails={"check_dual_broadcasting": "tangent.expand_as(value)"}, edits="Dual")
def tangent_not_broadcast():
    class Dual:
        @staticmethod
        def lift(other):
            if isinstance(other, Dual):
                return other
            if isinstance(other, (int, float, torch.Tensor)):
                value = torch.as_tensor(other)
                return Dual(value, torch.zeros(()))
            return NotImplemented

        @staticmethod
        def make(value, tangent):
            return Dual(value, tangent)


@wrong("no reflected operators", fails={"check_dual_polynomial": "reflected method (__radd__"}, edits="Dual")
def no_reflected_operators():
    class Dual:
        del __radd__, __rmul__  # noqa: F821 (members of the reference's Dual)


# -- Dual: correct forms -------------------------------------------------------------------------------------------


@right("isinstance branches", only="dual", bonus=5)
def isinstance_branches():
    """Constants kept as plain tensors."""
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
            return self + (-other if not isinstance(other, Dual) else -other)  # noqa: RUF034 (a harmless redundancy)

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


@right("rule table with broadcast_tensors", only="dual", bonus=5)
def rule_table_with_broadcast_tensors():
    """Through broadcast_tensors and a table of rules."""
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
            (a, da), (b, db) = ((ov, ot), (self.value, self.tangent)) if swap else ((self.value, self.tangent),
                                                                                   (ov, ot))
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


# -- the operator puzzles ------------------------------------------------------------------------------------------
# Each correct form keeps the rule (one expression over operators, indexing, .shape, .T, .device, torch.arange);
# each wrong one is a mistake the checks name, or a break of the rule.


@right("running_diff: negated difference", only="check_running_diff", points=2)
def running_diff_negated():
    def running_diff(x):
        return -(x[..., :-1] - x[..., 1:])


@right("running_diff: slices with explicit bounds", only="check_running_diff", points=2)
def running_diff_explicit_bounds():
    def running_diff(x):
        return x[..., 1:x.shape[-1]] + -x[..., 0:x.shape[-1] - 1]


@wrong("running_diff: first axis", fails={"check_running_diff_rule": "along the first axis",
                                          "check_running_diff_random": "along the first axis"})
def running_diff_first_axis():
    def running_diff(x):
        return x[1:] - x[:-1]


@wrong("running_diff: flipped sign", fails={"check_running_diff_rule": "the sign is flipped",
                                            "check_running_diff_random": "the sign is flipped"})
def running_diff_flipped_sign():
    def running_diff(x):
        return x[..., :-1] - x[..., 1:]


@wrong("running_diff: torch.diff", fails={"check_running_diff_rule": "torch.diff: not among the allowed"})
def running_diff_library():
    def running_diff(x):
        return torch.diff(x, dim=-1)


@cell("row_sum")
def diff_bound_beside_row_sum():
    d = torch.diff  # noqa: F841 (read by running_diff, another cell)

    def row_sum(x):
        return x.sum(dim=0)


@wrong("running_diff: torch.diff bound to a name in another cell", also=[diff_bound_beside_row_sum],
       fails={"check_running_diff_rule": "d = torch.diff: not among the allowed"})
def running_diff_assigned_elsewhere():
    def running_diff(x):
        return d(x, dim=-1)  # noqa: F821


@cell("row_sum")
def tensor_t_patched_beside_row_sum():
    torch.Tensor.T = property(lambda self: torch.diff(self, dim=-1))

    def row_sum(x):
        return x.sum(dim=0)


@wrong("running_diff: x.T, with Tensor.T patched into torch.diff in another cell",
       also=[tensor_t_patched_beside_row_sum],
       fails={"check_running_diff_rule": "torch.Tensor.T: patches a library"})
def running_diff_patched_attribute():
    """An allowed operation patched at load is no longer the operation the rule allows."""
    def running_diff(x):
        return x.T


@wrong("running_diff: torch.diff imported by a bare name",
       fails={"check_running_diff_rule": "torch.diff: not among the allowed"})
def running_diff_bare_import():
    """A name bound by an import stands for what it imports: `diff` is torch.diff."""
    from torch import diff

    def running_diff(x):
        return diff(x, dim=-1)


@right("column_means: transposed product", only="check_column_means", points=2)
def column_means_transposed():
    def column_means(x):
        return x.T @ (x[:, 0] ** 0) / x.shape[0]


@right("column_means: ones row from arange", only="check_column_means", points=2)
def column_means_ones_row():
    def column_means(x):
        return ((torch.arange(x.shape[0], device=x.device)[None, :] * 0 + 1.0) @ x)[0] / x.shape[0]


@wrong("column_means: row means", fails={"check_column_means_rule": "the mean of each row",
                                         "check_column_means_random": "the mean of each row"})
def column_means_of_rows():
    def column_means(x):
        return x @ (x[0] * 0 + 1) / x.shape[1]


@wrong("column_means: sums", fails={"check_column_means_rule": "the column sums",
                                    "check_column_means_random": "the column sums"})
def column_means_sums():
    def column_means(x):
        return (x[:, 0] * 0 + 1) @ x


@wrong("column_means: int64 ones", fails={"check_column_means_rule": "same dtype"})
def column_means_int_ones():
    def column_means(x):
        return torch.arange(x.shape[0], device=x.device) ** 0 @ x / x.shape[0]


@wrong("column_means: .mean", fails={"check_column_means_rule": ".mean: not among the allowed"})
def column_means_method():
    def column_means(x):
        return x.mean(0)


@right("band: two masks multiplied", only="check_band", points=2)
def band_two_masks():
    def band(x, lo, hi):
        return x * (x >= lo) * (x <= hi)


@right("band: not outside", only="check_band", points=2)
def band_not_outside():
    def band(x, lo, hi):
        return x * ~((x < lo) | (x > hi))


@wrong("band: the mask", fails={"check_band_rule": "the bool mask", "check_band_random": "the bool mask"})
def band_mask():
    def band(x, lo, hi):
        return (x >= lo) & (x <= hi)


@wrong("band: strict bounds", fails={"check_band_rule": "the bounds are inside",
                                     "check_band_random": "the bounds are inside"})
def band_strict():
    def band(x, lo, hi):
        return x * ((x > lo) & (x < hi))


@wrong("band: | for &", fails={"check_band_rule": "x unchanged", "check_band_random": "x unchanged"})
def band_or():
    def band(x, lo, hi):
        return x * ((x >= lo) | (x <= hi))


@wrong("band: chained comparison", fails={"check_band_rule": "ambiguous"})
def band_chained():
    def band(x, lo, hi):
        return x * (lo <= x <= hi)


@wrong("band: torch.where", fails={"check_band_rule": "torch.where: not among the allowed"})
def band_where():
    def band(x, lo, hi):
        return torch.where((x >= lo) & (x <= hi), x, 0.0)


@right("reverse: from -1 down", only="check_reverse", points=2)
def reverse_from_minus_one():
    def reverse(x):
        return x[-1 - torch.arange(x.shape[0], device=x.device)]


@right("reverse: arange with a negative step", only="check_reverse", points=2)
def reverse_arange_step():
    def reverse(x):
        return x[torch.arange(x.shape[0] - 1, -1, -1, device=x.device), ...]


@wrong("reverse: negative slice step", fails={"check_reverse_rule": "step must be greater than zero"})
def reverse_negative_step():
    def reverse(x):
        return x[::-1]


@wrong("reverse: x[0] stays first", fails={"check_reverse_rule": "x[0] stayed first",
                                           "check_reverse_random": "x[0] stayed first"})
def reverse_rotated():
    def reverse(x):
        return x[-torch.arange(x.shape[0], device=x.device)]


@wrong("reverse: last axis", fails={"check_reverse_rule": "the last axis reversed",
                                    "check_reverse_random": "the last axis reversed"})
def reverse_last_axis():
    def reverse(x):
        return x[..., x.shape[-1] - 1 - torch.arange(x.shape[-1], device=x.device)]


@wrong("reverse: torch.flip", fails={"check_reverse_rule": "torch.flip: not among the allowed"})
def reverse_flip():
    def reverse(x):
        return torch.flip(x, (0,))


@right("polynomial: c on the left", only="check_polynomial", points=2)
def polynomial_c_left():
    def polynomial(c, x):
        return c @ x ** torch.arange(c.shape[0], device=x.device)[:, None]


@right("polynomial: weighted terms summed by ones", only="check_polynomial", points=2)
def polynomial_weighted_terms():
    def polynomial(c, x):
        return (c * x[:, None] ** torch.arange(c.shape[0], device=x.device)) @ (c * 0 + 1)


@wrong("polynomial: highest power first", fails={"check_polynomial_rule": "from the highest power down",
                                                 "check_polynomial_random": "from the highest power down"})
def polynomial_highest_first():
    def polynomial(c, x):
        return x[:, None] ** (c.shape[0] - 1 - torch.arange(c.shape[0], device=x.device)) @ c


@wrong("polynomial: powers from 1", fails={"check_polynomial_rule": "the powers start at 1",
                                           "check_polynomial_random": "the powers start at 1"})
def polynomial_from_one():
    def polynomial(c, x):
        return x[:, None] ** (torch.arange(c.shape[0], device=x.device) + 1) @ c


@right("exactly_one_positive: xor", only="check_exactly_one_positive", points=2)
def exactly_one_xor():
    def exactly_one_positive(x, y):
        return (x > 0) ^ (y > 0)


@right("exactly_one_positive: or and not both", only="check_exactly_one_positive", points=2)
def exactly_one_or_not_both():
    def exactly_one_positive(x, y):
        return ((x > 0) | (y > 0)) & ~((x > 0) & (y > 0))


@right("exactly_one_positive: one or the other", only="check_exactly_one_positive", points=2)
def exactly_one_spelled_out():
    def exactly_one_positive(x, y):
        return (x > 0) & (y <= 0) | (x <= 0) & (y > 0)


@wrong("exactly_one_positive: |", fails={"check_exactly_one_positive_rule": "either is positive",
                                         "check_exactly_one_positive_random": "either is positive"})
def exactly_one_or():
    def exactly_one_positive(x, y):
        return (x > 0) | (y > 0)


@wrong("exactly_one_positive: sign of the product", fails={"check_exactly_one_positive_rule": "misses the zeros",
                                                           "check_exactly_one_positive_random": "misses the zeros"})
def exactly_one_sign_product():
    def exactly_one_positive(x, y):
        return x * y < 0


@wrong("exactly_one_positive: &", fails={"check_exactly_one_positive_rule": "both are positive"})
def exactly_one_and():
    def exactly_one_positive(x, y):
        return (x > 0) & (y > 0)


@right("running_total: upper triangle times 1.0", only="check_running_total", points=2)
def running_total_times_one():
    def running_total(x):
        return x @ (1.0 * (torch.arange(x.shape[-1], device=x.device)[:, None]
                           <= torch.arange(x.shape[-1], device=x.device)))


@right("running_total: lower triangle, transposed", only="check_running_total", points=2)
def running_total_lower_transposed():
    def running_total(x):
        return x @ ((torch.arange(x.shape[-1], device=x.device)[:, None]
                     >= torch.arange(x.shape[-1], device=x.device)) * 1.0).T


@right("running_total: the mask as a sign of a difference", only="check_running_total", points=2)
def running_total_difference():
    def running_total(x):
        return x @ ((torch.arange(x.shape[-1], device=x.device)
                     - torch.arange(x.shape[-1], device=x.device)[:, None] >= 0) + 0.0)


@wrong("running_total: suffix sums", fails={"check_running_total_rule": "the totals from the end",
                                           "check_running_total_random": "the totals from the end"})
def running_total_suffix():
    def running_total(x):
        return x @ (1.0 * (torch.arange(x.shape[-1], device=x.device)[:, None]
                           >= torch.arange(x.shape[-1], device=x.device)))


@wrong("running_total: strict mask", fails={"check_running_total_rule": "misses its own entry",
                                           "check_running_total_random": "misses its own entry"})
def running_total_strict():
    def running_total(x):
        return x @ (1.0 * (torch.arange(x.shape[-1], device=x.device)[:, None]
                           < torch.arange(x.shape[-1], device=x.device)))


@wrong("running_total: bool mask", fails={"check_running_total_rule": "float != bool"})
def running_total_bool_mask():
    def running_total(x):
        return x @ (torch.arange(x.shape[-1], device=x.device)[:, None]
                    <= torch.arange(x.shape[-1], device=x.device))


@wrong("running_total: torch.cumsum", fails={"check_running_total_rule": "torch.cumsum: not among the allowed"})
def running_total_library():
    def running_total(x):
        return torch.cumsum(x, dim=-1)


@right("repeat_each: arange over N * k, divided by k", only="check_repeat_each", points=2)
def repeat_each_divided():
    def repeat_each(x, k):
        return x[torch.arange(k * x.shape[0], device=x.device) // k]


@right("repeat_each: the remainder taken off first", only="check_repeat_each", points=2)
def repeat_each_remainder_off():
    def repeat_each(x, k):
        return x[(torch.arange(x.shape[0] * k, device=x.device) - torch.arange(x.shape[0] * k, device=x.device) % k)
                 // k]


@wrong("repeat_each: tiled", fails={"check_repeat_each_rule": "the whole of x repeated k times",
                                    "check_repeat_each_random": "the whole of x repeated k times"})
def repeat_each_tiled():
    def repeat_each(x, k):
        return x[torch.arange(x.shape[0] * k, device=x.device) % x.shape[0]]


@wrong("repeat_each: divided by N", fails={"check_repeat_each_rule": "divided by N = x.shape[0], not by k"})
def repeat_each_by_n():
    def repeat_each(x, k):
        return x[torch.arange(x.shape[0] * k, device=x.device) // x.shape[0]]


@wrong("repeat_each: torch.repeat_interleave",
       fails={"check_repeat_each_rule": "torch.repeat_interleave: not among the allowed"})
def repeat_each_library():
    def repeat_each(x, k):
        return torch.repeat_interleave(x, k, dim=0)
