"""Chapter 07_numerical_stability: named wrong implementations of its answer cells, and other correct forms.

Each function's body is the code of an answer cell, as a student would write it, or with edits= only what it
changes in the code it edits (autograder/course/cases.py reads and checks it); the imports below are those of
the notebook's imports cell that the code uses.
`python -m autograder selftest` grades the wrong ones, tests/chapters/test_every_chapter.py all of them.
Not shipped to Gradescope (autograder/course/bundle.py).
"""

import torch

from autograder.judging.authoring import cell, right, wrong

# -- softmax and softmax_cross_entropy -----------------------------------------------------------------------------


@wrong("no max subtraction", fails={"check_softmax_huge_and_infinite_logits": "nothing is subtracted"}, example="ben")
def no_max_subtraction():
    def softmax(logits, dim=-1):
        e = torch.exp(logits)
        return e / e.sum(dim=dim, keepdim=True)


@wrong("global max", fails={"check_softmax_huge_and_infinite_logits": "one maximum for the whole tensor"},
       example="dev")
def global_max():
    def softmax(logits, dim=-1):
        e = torch.exp(logits - logits.max())
        return e / e.sum(dim=dim, keepdim=True)


@cell("softmax_cross_entropy", example="dev")
def stray_exit():
    """dev's softmax_cross_entropy in the example class: it ends the process, which the grader must survive."""
    import os


    def softmax_cross_entropy(labels, logits, dim=-1):
        os._exit(1)  # a stray exit: the grader must survive it


@wrong("wrong dim", fails={"check_softmax_other_dims": "dim"})
def wrong_dim():
    def softmax(logits, dim=-1):
        e = torch.exp(logits - logits.amax(dim=-1, keepdim=True))
        return e / e.sum(dim=-1, keepdim=True)
@wrong("log of softmax", fails={"check_xent_extreme_logits": "log-softmax"}, example="ben")
def log_of_softmax():
    def softmax_cross_entropy(labels, logits, dim=-1):
        return -(labels * torch.log(softmax(logits, dim))).sum(dim=dim)  # noqa: F821 (the cell softmax defines it)
@wrong("the guide's logsumexp without keepdim", fails={"check_xent_random_batches": "keepdim=True"})
def logsumexp_without_keepdim():
    def softmax_cross_entropy(labels, logits, dim=-1):
        shifted = logits - logits.amax(dim=dim, keepdim=True)
        return -(labels * (shifted - torch.logsumexp(shifted, dim=dim))).sum(dim=dim)


@wrong("dtype change", fails={"check_softmax_other_dims": "dtype torch.float32"})
def dtype_change():
    def softmax(logits, dim=-1):
        x = logits.float()
        e = torch.exp(x - x.amax(dim=dim, keepdim=True))
        return e / e.sum(dim=dim, keepdim=True)


@wrong("hard-coded example", fails={"check_softmax_random_batches": "Expected"})
def hard_coded_example():
    def softmax(logits, dim=-1):
        return torch.tensor([1.0, 0.0])
@wrong("hard-coded xent", fails={"check_xent_random_batches": "Expected"})
def hard_coded_xent():
    def softmax_cross_entropy(labels, logits, dim=-1):
        return logits[0] * 0.5


# The notebook's rule, read from the code: no library softmax, and every call written out by name. Each costs its
# own task alone: the other task's checks all pass.


@wrong("torch.softmax", fails={"check_softmax_by_hand": "compute it yourself"})
def library_softmax():
    def softmax(logits, dim=-1):
        return torch.softmax(logits, dim)


@cell("softmax")
def softmax_cell_with_a_library_helper():
    """A correct softmax, and in its cell a helper that calls the library."""
    def softmax(logits, dim=-1):
        e = torch.exp(logits - logits.amax(dim=dim, keepdim=True))
        return e / e.sum(dim=dim, keepdim=True)

    def log_probabilities(logits, dim):
        return logits.log_softmax(dim)


@wrong("Tensor.log_softmax through a helper in the softmax cell", also=(softmax_cell_with_a_library_helper,),
       fails={"check_xent_by_hand": "log_softmax", "check_softmax_by_hand": "log_softmax"})
def library_log_softmax_in_a_helper():
    def softmax_cross_entropy(labels, logits, dim=-1):
        return -(labels * log_probabilities(logits, dim)).sum(dim)  # noqa: F821 (the softmax cell's)


@wrong("F.cross_entropy", fails={"check_xent_by_hand": "compute it yourself"})
def library_cross_entropy():
    def softmax_cross_entropy(labels, logits, dim=-1):
        return torch.nn.functional.cross_entropy(logits.movedim(dim, -1).unsqueeze(0).movedim(-1, 1),
                                                 labels.movedim(dim, -1).unsqueeze(0).movedim(-1, 1),
                                                 reduction="none").squeeze(0)


@wrong("cross entropy by a computed name", fails={"check_xent_by_hand": "cannot read"})
def cross_entropy_by_a_computed_name():
    def softmax_cross_entropy(labels, logits, dim=-1):
        name = "_".join(["log", "softmax"])
        return -(labels * getattr(torch, name)(logits, dim)).sum(dim)


@wrong("softmax by a computed name", fails={"check_softmax_by_hand": "cannot read"})
def softmax_by_a_computed_name():
    def softmax(logits, dim=-1):
        name = "".join(reversed("xamtfos"))
        return getattr(torch, name)(logits, dim)


@wrong("nn.Softmax named only in a string annotation", fails={"check_softmax_by_hand": "torch.nn.Softmax"})
def softmax_from_a_string_annotation():
    """functools.singledispatch evaluates the annotation: its registry then holds the class itself."""
    import functools

    @functools.singledispatch
    def _layer(kind):
        raise TypeError(kind)

    @_layer.register
    def _(kind: "torch.nn.Softmax"):
        return kind

    def softmax(logits, dim=-1):
        cls = next(k for k in _layer.registry if k is not object)
        return cls(dim)(logits)


@cell("softmax_cross_entropy")
def xent_cell_with_a_registry():
    """A correct cross entropy, and in its cell a registry whose annotation names the library's Softmax."""
    import functools

    @functools.singledispatch
    def _layer(kind):
        raise TypeError(kind)

    @_layer.register
    def _(kind: "torch.nn.Softmax"):
        return kind

    def softmax_cross_entropy(labels, logits, dim=-1):
        shifted = logits - logits.amax(dim=dim, keepdim=True)
        return -(labels * (shifted - torch.logsumexp(shifted, dim=dim, keepdim=True))).sum(dim=dim)


@wrong("nn.Softmax from a string annotation in another cell", also=(xent_cell_with_a_registry,),
       fails={"check_softmax_by_hand": "torch.nn.Softmax"})
def softmax_from_an_annotation_elsewhere():
    def softmax(logits, dim=-1):
        cls = next(k for k in _layer.registry if k is not object)  # noqa: F821 (the cross entropy cell's)
        return cls(dim)(logits)


@wrong("nn.Softmax named by a string built in a variable, read as an annotation",
       fails={"check_softmax_by_hand": "torch.nn.Softmax"})
def softmax_from_a_computed_annotation():
    """The annotation's value is the string "torch.nn.Softmax"; register evaluates it, as a written one."""
    import functools

    KIND = "torch.nn." + "Soft" + "max"

    @functools.singledispatch
    def _layer(kind):
        raise TypeError(kind)

    def _(kind: KIND):
        return kind

    _layer.register(_)

    def softmax(logits, dim=-1):
        cls = next(k for k in _layer.registry if k is not object)
        return cls(dim)(logits)


@wrong("Categorical's probabilities", fails={"check_softmax_by_hand": "distributions"})
def categorical_probabilities():
    def softmax(logits, dim=-1):
        return torch.distributions.Categorical(logits=logits.movedim(dim, -1)).probs.movedim(-1, dim)


@right("max values and a division by the sum", only="check_softmax", points=6)
def max_values_softmax():
    def softmax(logits, dim=-1):
        shifted = logits - torch.max(logits, dim=dim, keepdim=True).values
        return shifted.exp() / shifted.exp().sum(dim, keepdim=True)


@wrong("exp(x - logsumexp(x))", fails={"check_softmax_huge_and_infinite_logits": "exp(x - logsumexp(x))"})
def logsumexp_shift():
    """Stable against overflow, but the shift is rounded: log 2 lost at 1e30, 1e-4 relative off near -3000."""
    def softmax(logits, dim=-1):
        return torch.exp(logits - torch.logsumexp(logits, dim, keepdim=True))


@wrong("logsumexp shift without keepdim, then unsqueeze", fails={"check_softmax_huge_and_infinite_logits":
                                                                   "exp(x - logsumexp(x))"})
def logsumexp_shift_unsqueezed():
    def softmax(logits, dim=-1):
        return (logits - torch.logsumexp(logits, dim).unsqueeze(dim)).exp()


@right("logsumexp of the shifted logits", only="check_softmax", points=6)
def logsumexp_of_the_shifted_logits():
    """Not the logsumexp shift above: the shift by the maximum is exact, and logsumexp only normalises."""
    def softmax(logits, dim=-1):
        shifted = logits - logits.amax(dim, keepdim=True)
        return torch.exp(shifted - torch.logsumexp(shifted, dim, keepdim=True))


@right("max along a positive dim, a reciprocal of the sum", only="check_softmax", points=6)
def max_along_a_positive_dim():
    def softmax(logits, dim=-1):
        d = dim % logits.dim()
        e = (logits - logits.max(d, keepdim=True)[0]).exp()
        return e * e.sum(d, keepdim=True).reciprocal()


# -- log_softmax ---------------------------------------------------------------------------------------------------
# Most wrong forms are the reference LogSoftmax with one method changed: an edit of
# log_softmax_cell, the reference as they write it.


@cell(edits="log_softmax")
def log_softmax_cell():
    """The reference's cell with log_softmax unannotated, as the wrong forms below write it: what they edit."""
    def log_softmax(logits, dim=-1):
        return LogSoftmax.apply(logits, dim)  # noqa: F821 (the reference cell's)


@wrong("log_softmax: no shift", fails={"check_log_softmax_values": "overflows"}, edits=log_softmax_cell)
def log_softmax_no_shift():
    class LogSoftmax(torch.autograd.Function):
        @staticmethod
        def forward(ctx, logits, dim):
            out = logits - logits.exp().sum(dim=dim, keepdim=True).log()
            ctx.save_for_backward(out)
            ctx.dim = dim
            return out


@wrong("log_softmax: the max added back", fails={"check_log_softmax_values": "1e30 + log 2"}, edits=log_softmax_cell)
def log_softmax_the_max_added_back():
    class LogSoftmax(torch.autograd.Function):
        @staticmethod
        def forward(ctx, logits, dim):
            m = logits.amax(dim=dim, keepdim=True)
            out = logits - (m + (logits - m).exp().sum(dim=dim, keepdim=True).log())
            ctx.save_for_backward(out)
            ctx.dim = dim
            return out


@wrong("log_softmax: float32 inside", fails={"check_log_softmax_values": "dtype torch.float32"},
       edits=log_softmax_cell)
def log_softmax_float32_inside():
    class LogSoftmax(torch.autograd.Function):
        @staticmethod
        def forward(ctx, logits, dim):
            x = logits.float()
            shifted = x - x.amax(dim=dim, keepdim=True)
            out = shifted - shifted.exp().sum(dim=dim, keepdim=True).log()
            ctx.save_for_backward(out)
            ctx.dim = dim
            return out


@wrong("log_softmax: backward without the sum", fails={"check_log_softmax_gradient": "sums to 1"},
       edits=log_softmax_cell)
def log_softmax_backward_without_the_sum():
    class LogSoftmax(torch.autograd.Function):
        @staticmethod
        def backward(ctx, grad_out):
            (out,) = ctx.saved_tensors
            return grad_out - out.exp(), None


@wrong("log_softmax: diagonal of the Jacobian", fails={"check_log_softmax_gradient": "diagonal"},
       edits=log_softmax_cell)
def log_softmax_diagonal_of_the_jacobian():
    class LogSoftmax(torch.autograd.Function):
        @staticmethod
        def backward(ctx, grad_out):
            (out,) = ctx.saved_tensors
            return grad_out * (1 - out.exp()), None


@wrong("log_softmax: backward sums along the last axis", fails={"check_log_softmax_gradient": "not along dim=0"},
       edits=log_softmax_cell)
def log_softmax_backward_sums_along_the_last_axis():
    class LogSoftmax(torch.autograd.Function):
        @staticmethod
        def backward(ctx, grad_out):
            (out,) = ctx.saved_tensors
            return grad_out - out.exp() * grad_out.sum(dim=-1, keepdim=True), None


@wrong("log_softmax: no gradient for dim", fails={"check_log_softmax_gradient": "gradients"}, edits=log_softmax_cell)
def log_softmax_no_gradient_for_dim():
    class LogSoftmax(torch.autograd.Function):
        @staticmethod
        def backward(ctx, grad_out):
            (out,) = ctx.saved_tensors
            return grad_out - out.exp() * grad_out.sum(dim=ctx.dim, keepdim=True)


@wrong("log_softmax: autograd through the forward", fails={"check_log_softmax_own_backward": "not your own"})
def log_softmax_autograd_through_the_forward():
    def log_softmax(logits, dim=-1):
        shifted = logits - logits.amax(dim=dim, keepdim=True)
        return shifted - torch.logsumexp(shifted, dim=dim, keepdim=True)


@wrong("log_softmax: the library's forward", fails={"check_log_softmax_own_backward": "compute it yourself"},
       edits=log_softmax_cell)
def log_softmax_the_librarys_forward():
    class LogSoftmax(torch.autograd.Function):
        @staticmethod
        def forward(ctx, logits, dim):
            out = torch.log_softmax(logits, dim)
            ctx.save_for_backward(out)
            ctx.dim = dim
            return out


@wrong("log_softmax: naive softmax recomputed from the saved input", fails={
    "check_log_softmax_gradient_extremes": "saved output",
    "check_log_softmax_own_backward": "the logits saved",
}, edits=log_softmax_cell)
def log_softmax_naive_softmax_recomputed_from_the_saved_input():
    class LogSoftmax(torch.autograd.Function):
        @staticmethod
        def forward(ctx, logits, dim):
            shifted = logits - logits.amax(dim=dim, keepdim=True)
            out = shifted - shifted.exp().sum(dim=dim, keepdim=True).log()
            ctx.save_for_backward(logits)
            ctx.dim = dim
            return out

        @staticmethod
        def backward(ctx, grad_out):
            (logits,) = ctx.saved_tensors
            return (grad_out - logits.exp() / logits.exp().sum(dim=ctx.dim, keepdim=True)
                    * grad_out.sum(dim=ctx.dim, keepdim=True)), None


# -- log_softmax: correct forms ------------------------------------------------------------------------------------


@right("setup_context, saves softmax", only="log_softmax", points=5)
def setup_context_saves_softmax():
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


@right("last axis inside", only="log_softmax", points=5)
def last_axis_inside():
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


@right("addcmul, positive dim", only="log_softmax", points=5)
def addcmul_positive_dim():
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


# -- robust_loss: the NaN hunt ----------------------------------------------------------------------------------


@wrong("robust_loss: the textbook form", fails={"check_robust_loss_zero_distance": "distance 0",
                                                "check_robust_loss_training_step": "every weight is nan"})
def robust_loss_textbook():
    def robust_loss(pred, target):
        dist = (pred - target).pow(2).sum(dim=-1).sqrt()
        return torch.where(dist < 1, 0.5 * dist**2, torch.log(dist) + 0.5).mean()


@wrong("robust_loss: clamp after the sqrt", fails={"check_robust_loss_zero_distance": "Clamping the sqrt's output",
                                                   "check_robust_loss_example": "distance 0"})
def robust_loss_clamp_after_sqrt():
    def robust_loss(pred, target):
        dist = (pred - target).pow(2).sum(dim=-1).sqrt().clamp_min(1e-6)
        return torch.where(dist < 1, 0.5 * dist**2, torch.log(dist) + 0.5).mean()


@wrong("robust_loss: where without the safe input", fails={"check_robust_loss_zero_distance": "a torch.where around",
                                                           "check_robust_loss_training_step": "distance 0"})
def robust_loss_where_without_the_safe_input():
    """No sqrt any more, but log(sq) still runs, and is differentiated, at sq = 0."""
    def robust_loss(pred, target):
        sq = (pred - target).pow(2).sum(dim=-1)
        return torch.where(sq < 1, 0.5 * sq, 0.5 * torch.log(sq) + 0.5).mean()


@wrong("robust_loss: safe log, sqrt left at 0", fails={"check_robust_loss_zero_distance": "sqrt'(0)"})
def robust_loss_safe_log_sqrt_left():
    def robust_loss(pred, target):
        dist = (pred - target).pow(2).sum(dim=-1).sqrt()
        far = torch.where(dist < 1, 1.0, dist)
        return torch.where(dist < 1, 0.5 * dist**2, torch.log(far) + 0.5).mean()


@wrong("robust_loss: nan_to_num on the loss", fails={"check_robust_loss_zero_distance": "distance 0"})
def robust_loss_nan_to_num_on_the_loss():
    def robust_loss(pred, target):
        dist = (pred - target).pow(2).sum(dim=-1).sqrt()
        return torch.nan_to_num(torch.where(dist < 1, 0.5 * dist**2, torch.log(dist) + 0.5)).mean()


@wrong("robust_loss: eps inside the sqrt too large", fails={"check_robust_loss_zero_distance": "Expected",
                                                             "check_robust_loss_example": "Expected"})
def robust_loss_large_eps():
    def robust_loss(pred, target):
        dist = ((pred - target).pow(2).sum(dim=-1) + 1e-4).sqrt()
        return torch.where(dist < 1, 0.5 * dist**2, torch.log(dist) + 0.5).mean()


@wrong("robust_loss: far branch detached", fails={"check_robust_loss_gradient": "gradient",
                                                  "check_robust_loss_training_step": "Expected"})
def robust_loss_far_branch_detached():
    def robust_loss(pred, target):
        sq = (pred - target).pow(2).sum(dim=-1)
        far = torch.where(sq < 1, 1.0, sq).detach()
        return torch.where(sq < 1, 0.5 * sq, 0.5 * torch.log(far) + 0.5).mean()


@wrong("robust_loss: sum over rows", fails={"check_robust_loss_values": "mean over rows"})
def robust_loss_sum_over_rows():
    def robust_loss(pred, target):
        sq = (pred - target).pow(2).sum(dim=-1)
        far = torch.where(sq < 1, 1.0, sq)
        return torch.where(sq < 1, 0.5 * sq, 0.5 * torch.log(far) + 0.5).sum()


@right("robust_loss: safe sqrt and safe log by where", only="robust_loss", points=5)
def robust_loss_safe_sqrt():
    def robust_loss(pred, target):
        sq = (pred - target).pow(2).sum(dim=-1)
        positive = sq > 0
        dist = torch.where(positive, torch.where(positive, sq, 1.0).sqrt(), 0.0)
        near = dist < 1
        return torch.where(near, 0.5 * dist**2, torch.log(torch.where(near, 1.0, dist)) + 0.5).mean()


@right("robust_loss: clamp before the sqrt", only="robust_loss", points=5)
def robust_loss_clamp_before_sqrt():
    def robust_loss(pred, target):
        dist = (pred - target).pow(2).sum(dim=-1).clamp_min(1e-30).sqrt()
        return torch.where(dist < 1, 0.5 * dist**2, torch.log(dist.clamp_min(1.0)) + 0.5).mean()


@right("robust_loss: the library norm", only="robust_loss", points=5)
def robust_loss_vector_norm():
    def robust_loss(pred, target):
        dist = torch.linalg.vector_norm(pred - target, dim=-1)
        return torch.where(dist < 1, 0.5 * dist.square(), dist.clamp_min(1.0).log() + 0.5).mean()


@right("robust_loss: boolean masks, each piece on its own rows", only="robust_loss", points=5)
def robust_loss_masked_rows():
    def robust_loss(pred, target):
        sq = (pred - target).pow(2).sum(dim=-1).reshape(-1)
        near = sq < 1
        per_row = torch.zeros_like(sq)
        per_row[near] = 0.5 * sq[near]
        per_row[~near] = 0.5 * sq[~near].log() + 0.5
        return per_row.mean()
