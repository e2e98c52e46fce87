"""Chapter 07: each named wrong implementation (declared in autograder/course/selftest_cases.py, which the
self-test shares) loses points on the checks written to catch it, each message with its phrase.
The reference solution and the release are graded in tests/chapters/test_chapters.py."""

from __future__ import annotations

import pytest

from autograder.course import selftest
from autograder.course.selftest_cases import Mutant, mutants, solution_cells
from tests.chapters.test_chapters import grader

CH = "07_numerical_stability"


@pytest.mark.parametrize("mutant", mutants(CH), ids=lambda m: m.name)
def test_wrong_implementation_loses_points_where_expected(mutant: Mutant) -> None:
    row = selftest.mutant_row(mutant, "cpu", grader)
    assert row.ok, row.detail


# Correct forms of the stretch log_softmax, each unlike the reference: all earn the whole bonus.
SETUP_CONTEXT_SAVES_SOFTMAX = '''
class LogSoftmax(torch.autograd.Function):
    @staticmethod
    def forward(logits, dim):
        shifted = logits - logits.amax(dim, keepdim=True)
        return shifted - torch.logsumexp(shifted, dim, keepdim=True)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.dim = inputs[1]
        ctx.save_for_backward(output.exp())

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):
        (probs,) = ctx.saved_tensors
        return grad - probs * grad.sum(ctx.dim, keepdim=True), None


def log_softmax(logits, dim=-1):
    return LogSoftmax.apply(logits, dim)
'''
LAST_AXIS_INSIDE = '''
class LogSoftmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, dim):
        x = logits.movedim(dim, -1)
        shifted = x - x.max(dim=-1, keepdim=True).values
        out = (shifted - torch.log(torch.exp(shifted).sum(-1, keepdim=True))).movedim(-1, dim)
        ctx.dim = dim
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        g, y = grad.movedim(ctx.dim, -1), out.movedim(ctx.dim, -1)
        return (g - torch.exp(y) * g.sum(-1, keepdim=True)).movedim(-1, ctx.dim), None


def log_softmax(logits, dim=-1):
    return LogSoftmax.apply(logits, dim)
'''
ADDCMUL_POSITIVE_DIM = '''
class _LogSoftmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, dim):
        d = dim % logits.dim()
        shifted = logits - logits.max(d, keepdim=True)[0]
        result = shifted - shifted.exp().sum(d, keepdim=True).log()
        ctx.d = d
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        result, = ctx.saved_tensors
        return torch.addcmul(grad_output, result.exp(), grad_output.sum(ctx.d, keepdim=True), value=-1), None


def log_softmax(logits, dim=-1):
    return _LogSoftmax.apply(logits, dim)
'''


@pytest.mark.parametrize("code", [SETUP_CONTEXT_SAVES_SOFTMAX, LAST_AXIS_INSIDE, ADDCMUL_POSITIVE_DIM],
                         ids=["setup_context, saves softmax", "last axis inside", "addcmul, positive dim"])
def test_correct_log_softmax_forms_earn_the_whole_bonus(code: str) -> None:
    g = selftest._graded(grader, CH, {**solution_cells(CH), "log_softmax": code}, "cpu", "log_softmax")
    assert not isinstance(g, str), g
    assert (g.bonus, g.bonus_max) == (4.0, 4.0), [r.output for r in g.results if r.status != "passed"]
