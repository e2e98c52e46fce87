"""Chapter 08: each named wrong implementation (declared in autograder/course/selftest_cases.py, which the
self-test shares) loses points on the checks written to catch it, each message with its phrase.
The reference solution and the release are graded in tests/chapters/test_chapters.py."""

from __future__ import annotations

import pytest

from autograder.course import selftest
from autograder.course.selftest_cases import Mutant, mutants, solution_cells
from tests.chapters.test_chapters import grader

CH = "08_mixed_precision"


@pytest.mark.parametrize("mutant", mutants(CH), ids=lambda m: m.name)
def test_wrong_implementation_loses_points_where_expected(mutant: Mutant) -> None:
    row = selftest.mutant_row(mutant, "cpu", grader)
    assert row.ok, row.detail


# Correct forms of the stretch LossScaler, each unlike the reference: all earn the whole bonus.
TENSOR_SCALE_PER_OPTIMIZER = '''
class LossScaler:
    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
        self.scale_t = torch.tensor(float(init_scale))
        self.factors = (growth_factor, backoff_factor)
        self.interval = growth_interval
        self.streak = 0
        self.per_optimizer = {}  # id(optimizer) -> found inf, for the optimizers unscaled in this iteration

    def get_scale(self):
        return float(self.scale_t.item())

    def scale(self, loss):
        return loss * self.scale_t.to(loss.dtype)

    def unscale_(self, optimizer):
        if id(optimizer) in self.per_optimizer:
            return
        grads = [p.grad for g in optimizer.param_groups for p in g["params"] if p.grad is not None]
        for grad in grads:
            grad.mul_(self.scale_t.reciprocal())
        flat = torch.cat([grad.reshape(-1) for grad in grads]) if grads else torch.zeros(0)
        self.per_optimizer[id(optimizer)] = not bool(torch.isfinite(flat).all())

    def step(self, optimizer):
        self.unscale_(optimizer)
        return None if self.per_optimizer[id(optimizer)] else optimizer.step()

    def update(self):
        if any(self.per_optimizer.values()):
            self.scale_t = self.scale_t * self.factors[1]
            self.streak = 0
        else:
            self.streak += 1
            if self.streak >= self.interval:
                self.scale_t = self.scale_t * self.factors[0]
                self.streak = 0
        self.per_optimizer = {}
'''
MODULAR_COUNT = '''
class LossScaler:
    def __init__(self, init_scale=65536.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
        self.current = init_scale
        self.growth, self.backoff, self.every = growth_factor, backoff_factor, growth_interval
        self.good = 0
        self.state = "fresh"  # fresh -> unscaled (finite) / overflow -> fresh after update

    def get_scale(self):
        return float(self.current)

    def scale(self, loss):
        return self.current * loss

    def unscale_(self, optimizer):
        if self.state != "fresh":
            return
        finite = True
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                p.grad /= self.current
                finite = finite and bool(p.grad.isfinite().all())
        self.state = "unscaled" if finite else "overflow"

    def step(self, optimizer):
        self.unscale_(optimizer)
        if self.state == "unscaled":
            optimizer.step()

    def update(self):
        if self.state == "overflow":
            self.current, self.good = self.current * self.backoff, 0
        else:
            self.good = (self.good + 1) % self.every
            if self.good == 0:
                self.current *= self.growth
        self.state = "fresh"
'''
MAX_ABS_CHECK = '''
import math


class LossScaler:
    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
        self.s, self.g, self.b, self.n = float(init_scale), growth_factor, backoff_factor, growth_interval
        self.count, self.skip, self.done = 0, False, set()

    def get_scale(self):
        return self.s

    def scale(self, loss):
        return loss.mul(self.s)

    def unscale_(self, optimizer):
        if optimizer in self.done:
            return
        self.done.add(optimizer)
        with torch.no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        p.grad.mul_(1.0 / self.s)
                        peak = p.grad.abs().max().item() if p.grad.numel() else 0.0
                        self.skip |= not math.isfinite(peak)

    def step(self, optimizer):
        self.unscale_(optimizer)
        if not self.skip:
            optimizer.step()

    def update(self):
        self.count = 0 if self.skip else self.count + 1
        self.s *= self.b if self.skip else 1.0
        if self.count == self.n:
            self.s *= self.g
            self.count = 0
        self.skip, self.done = False, set()
'''


@pytest.mark.parametrize("code", [TENSOR_SCALE_PER_OPTIMIZER, MODULAR_COUNT, MAX_ABS_CHECK],
                         ids=["tensor scale, per optimizer", "modular count", "max-abs check"])
def test_correct_loss_scaler_forms_earn_the_whole_bonus(code: str) -> None:
    g = selftest._graded(grader, CH, {**solution_cells(CH), "LossScaler": code}, "cpu", "loss_scaler")
    assert not isinstance(g, str), g
    assert (g.bonus, g.bonus_max) == (5.0, 5.0), [r.output for r in g.results if r.status != "passed"]
