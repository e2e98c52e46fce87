"""Chapter 02: each named wrong implementation (declared in autograder/course/selftest_cases.py, which the
self-test shares) loses points on the checks written to catch it, each message with its phrase.
The reference solution and the release are graded in tests/chapters/test_chapters.py."""

from __future__ import annotations

import pytest

from autograder.course import selftest
from autograder.course.selftest_cases import Mutant, mutants, solution_cells
from tests.chapters.test_chapters import grader

CH = "02_modules"


@pytest.mark.parametrize("mutant", mutants(CH), ids=lambda m: m.name)
def test_wrong_implementation_loses_points_where_expected(mutant: Mutant) -> None:
    row = selftest.mutant_row(mutant, "cpu", grader)
    assert row.ok, row.detail


# Correct forms of the stretch exercise, other than the reference: each earns the whole bonus.
RUNNING_NORM_FORMS = {
    "a subclass of nn.BatchNorm1d": '''
class RunningNorm(nn.BatchNorm1d):
    def __init__(self, num_features, momentum=0.1, eps=1e-5):
        super().__init__(num_features, eps=eps, momentum=momentum, affine=False)

    def forward(self, x):
        return super().forward(x.reshape(-1, x.shape[-1])).reshape(x.shape)
''',
    "F.batch_norm on its own buffers": '''
class RunningNorm(nn.Module):
    def __init__(self, num_features, momentum=0.1, eps=1e-5):
        super().__init__()
        self.momentum, self.eps = momentum, eps
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))

    def forward(self, x):
        out = F.batch_norm(x.reshape(-1, x.shape[-1]), self.running_mean, self.running_var,
                           training=self.training, momentum=self.momentum, eps=self.eps)
        return out.reshape(x.shape)
''',
    "var_mean and buffers reassigned from detached statistics": '''
class RunningNorm(nn.Module):
    def __init__(self, num_features, momentum=0.1, eps=1e-5):
        super().__init__()
        self.m, self.eps = momentum, eps
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))

    def forward(self, x):
        if not self.training:
            return (x - self.running_mean) * torch.rsqrt(self.running_var + self.eps)
        var, mean = torch.var_mean(x, dim=tuple(range(x.dim() - 1)), correction=0)
        n = x.numel() // x.shape[-1]
        self.running_mean = (1 - self.m) * self.running_mean + self.m * mean.detach()
        self.running_var = (1 - self.m) * self.running_var + self.m * var.detach() * n / (n - 1)
        return (x - mean) * torch.rsqrt(var + self.eps)
''',
}


@pytest.mark.parametrize("form", RUNNING_NORM_FORMS)
def test_every_correct_running_norm_earns_the_bonus(form: str) -> None:
    cells = {**solution_cells(CH), "RunningNorm": RUNNING_NORM_FORMS[form]}
    g = selftest._graded(grader, CH, cells, "cpu", "running_norm")
    assert not isinstance(g, str), g
    assert (g.bonus, g.bonus_max) == (5.0, 5.0), [r.output for r in g.results if r.status != "passed"]
