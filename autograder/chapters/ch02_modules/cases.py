"""Chapter 02_modules: named wrong implementations of its answer cells, and other correct forms.

Each function's body is the code of an answer cell, as a student would write it, or with edits= only what it
changes in the code it edits (autograder/course/cases.py reads and checks it); the imports below are those of
the notebook's imports cell that the code uses.
`python -m autograder selftest` grades the wrong ones, tests/chapters/test_every_chapter.py all of them.
Not shipped to Gradescope (autograder/course/bundle.py).
"""

import copy
import io

import torch
import torch.nn as nn
import torch.nn.functional as F

from autograder.judging.authoring import right, wrong

# -- AffineScalar --------------------------------------------------------------------------------------------------


@wrong("plain tensors, not nn.Parameter", fails={"check_affine_scalar": "parameters() is empty"})
def plain_tensors_not_nn_parameter():
    class AffineScalar(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.rand(1, requires_grad=True)
            self.b = torch.rand(1, requires_grad=True)

        def forward(self, x):
            return self.a * x + self.b


@wrong("parameters of shape []", fails={"check_affine_scalar": "'a': []"})
def parameters_of_shape_empty():
    class AffineScalar(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Parameter(torch.rand(()))
            self.b = nn.Parameter(torch.rand(()))

        def forward(self, x):
            return self.a * x + self.b


@wrong("a and b swapped", fails={"check_affine_scalar": "values differ"})
def a_and_b_swapped():
    class AffineScalar(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Parameter(torch.rand(1))
            self.b = nn.Parameter(torch.rand(1))

        def forward(self, x):
            return self.b * x + self.a


# -- LinearRegressor -----------------------------------------------------------------------------------------------


@wrong("no squeeze", fails={"check_linear_regressor": "squeeze(1)"})
def no_squeeze():
    class LinearRegressor(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(1, 1)

        def forward(self, x):
            return self.linear(x.unsqueeze(1))


@wrong("Linear not named linear", fails={"check_linear_regressor": "submodule `linear`"})
def linear_not_named_linear():
    class LinearRegressor(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(1, 1)

        def forward(self, x):
            return self.fc(x[:, None])[:, 0]


# -- make_mlp ------------------------------------------------------------------------------------------------------


@wrong("missing ReLU", fails={"check_make_mlp_guide_layers": "collapse"})
def missing_relu():
    def make_mlp(in_features, hidden_features, out_features):
        return nn.Sequential(nn.Linear(in_features, hidden_features), nn.Linear(hidden_features, out_features))


@wrong("the guide's sizes hard-coded", fails={"check_make_mlp_other_sizes": "differ in names or shapes"})
def guide_sizes_hard_coded():
    def make_mlp(in_features, hidden_features, out_features):
        return nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))


# -- train ---------------------------------------------------------------------------------------------------------


@wrong("no zero_grad", fails={"check_train_fits_line": "did not fit"}, example="ben")
def no_zero_grad():
    def train(model, x, y, steps=1000, lr=0.01):
        optimizer = torch.optim.SGD(model.parameters(), lr=lr)
        losses = []
        for _ in range(steps):
            pass  # no optimizer.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
            losses.append(loss)
        return loss.item()


@wrong("Adam at a rate of its own", fails={"check_train_follows_steps_and_lr": "least-squares line"})
def adam_at_its_own_rate():
    """Fits every line and returns the final loss, by another method than the one the task states."""
    def train(model, x, y, steps=1000, lr=0.01):
        optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
        for _ in range(3000):
            optimizer.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
        return F.mse_loss(model(x), y).item()


@wrong("one step too many", fails={"check_train_follows_steps_and_lr": "of SGD at lr=0."})
def one_step_too_many():
    def train(model, x, y, steps=1000, lr=0.01):
        optimizer = torch.optim.SGD(model.parameters(), lr=lr)
        for _ in range(steps + 1):
            optimizer.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
        return loss.item()


@wrong("steps and lr ignored", fails={"check_train_follows_steps_and_lr": "defaults"})
def steps_and_lr_ignored():
    def train(model, x, y, steps=1000, lr=0.01):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        losses = []
        for _ in range(1000):
            optimizer.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
            losses.append(loss)
        return loss.item()


@wrong("initial loss returned", fails={"check_train_returns_final_loss": "not the loss at the end"})
def initial_loss_returned():
    def train(model, x, y, steps=1000, lr=0.01):
        optimizer = torch.optim.SGD(model.parameters(), lr=lr)
        losses = []
        for _ in range(steps):
            optimizer.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
            losses.append(loss)
        return losses[0].item()


@wrong("loss tensor returned", fails={"check_train_returns_final_loss": "not float"})
def loss_tensor_returned():
    def train(model, x, y, steps=1000, lr=0.01):
        optimizer = torch.optim.SGD(model.parameters(), lr=lr)
        losses = []
        for _ in range(steps):
            optimizer.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
            losses.append(loss)
        return loss


@wrong("only a and b optimised", fails={"check_train_any_module": "has no attribute 'a'"})
def only_a_and_b_optimised():
    def train(model, x, y, steps=1000, lr=0.01):
        optimizer = torch.optim.SGD([model.a, model.b], lr=lr)
        losses = []
        for _ in range(steps):
            optimizer.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
            losses.append(loss)
        return loss.item()


# -- sgd_momentum_step ---------------------------------------------------------------------------------------------


@right("lr folded into the velocity", only="sgd_momentum_step", points=5)
def lr_in_the_velocity():
    def sgd_momentum_step(params, grads, velocities, lr, momentum):
        # v' = momentum v' + lr g is lr times PyTorch's velocity: the same parameters as long as lr is fixed
        scaled = [momentum * v * lr + lr * g for v, g in zip(velocities, grads, strict=True)]
        return [p - s for p, s in zip(params, scaled, strict=True)], [s / lr for s in scaled]


@right("a loop with torch.add and alpha", only="sgd_momentum_step", points=5)
def loop_with_alpha():
    def sgd_momentum_step(params, grads, velocities, lr, momentum):
        new_params, new_velocities = [], []
        for p, g, v in zip(params, grads, velocities, strict=True):
            v = torch.add(g, v, alpha=momentum)
            new_velocities.append(v)
            new_params.append(torch.add(p, v, alpha=-lr))
        return new_params, new_velocities


@wrong("dampened by 1 - momentum", fails={"check_sgd_momentum_step_example": "values differ"})
def dampened_velocity():
    def sgd_momentum_step(params, grads, velocities, lr, momentum):
        new_velocities = [momentum * v + (1 - momentum) * g for v, g in zip(velocities, grads, strict=True)]
        return [p - lr * v for p, v in zip(params, new_velocities, strict=True)], new_velocities


@wrong("steps with the old velocity", fails={"check_sgd_momentum_step_by_hand": "values differ"})
def old_velocity():
    def sgd_momentum_step(params, grads, velocities, lr, momentum):
        new_params = [p - lr * v for p, v in zip(params, velocities, strict=True)]
        return new_params, [momentum * v + g for v, g in zip(velocities, grads, strict=True)]


@wrong("steps the given tensors in place", fails={"check_sgd_momentum_step_float64": "in place"})
def steps_in_place():
    """Right values, returned as asked, but the caller's params and velocities are changed under it."""
    def sgd_momentum_step(params, grads, velocities, lr, momentum):
        with torch.no_grad():
            for p, g, v in zip(params, grads, velocities, strict=True):
                v.mul_(momentum).add_(g)
                p.sub_(lr * v)
        return list(params), list(velocities)


@wrong("torch.optim.SGD inside", fails={"check_sgd_momentum_step_by_hand": "torch.optim"})
def optim_inside():
    def sgd_momentum_step(params, grads, velocities, lr, momentum):
        copies = [p.detach().clone().requires_grad_(True) for p in params]
        optimizer = torch.optim.SGD(copies, lr=lr, momentum=momentum)
        for c, g, v in zip(copies, grads, velocities, strict=True):
            c.grad = g.clone()
            optimizer.state[c]["momentum_buffer"] = v.clone()
        optimizer.step()
        return ([c.detach() for c in copies],
                [optimizer.state[c]["momentum_buffer"].clone() for c in copies])


@wrong("torch.optim.SGD named by a string concatenated in an annotation",
       fails={"check_sgd_momentum_step_by_hand": "torch.optim.SGD"})
def optim_from_a_concatenated_annotation():
    import functools

    @functools.singledispatch
    def _maker(kind):
        raise TypeError(kind)

    @_maker.register
    def _(kind: "torch.optim." + "SGD"):  # noqa: F722, F821
        return kind

    def sgd_momentum_step(params, grads, velocities, lr, momentum):
        make = next(k for k in _maker.registry if k is not object)
        copies = [p.detach().clone().requires_grad_(True) for p in params]
        optimizer = make(copies, lr=lr, momentum=momentum)
        for c, g, v in zip(copies, grads, velocities, strict=True):
            c.grad = g.clone()
            optimizer.state[c]["momentum_buffer"] = v.clone()
        optimizer.step()
        return ([c.detach() for c in copies],
                [optimizer.state[c]["momentum_buffer"].clone() for c in copies])


@wrong("torch.optim.SGD named only in a string annotation", fails={"check_sgd_momentum_step_by_hand": "torch.optim"})
def optim_from_a_string_annotation():
    import functools

    @functools.singledispatch
    def _maker(kind):
        raise TypeError(kind)

    @_maker.register
    def _(kind: "torch.optim.SGD"):
        return kind

    def sgd_momentum_step(params, grads, velocities, lr, momentum):
        make = next(k for k in _maker.registry if k is not object)
        copies = [p.detach().clone().requires_grad_(True) for p in params]
        optimizer = make(copies, lr=lr, momentum=momentum)
        for c, g, v in zip(copies, grads, velocities, strict=True):
            c.grad = g.clone()
            optimizer.state[c]["momentum_buffer"] = v.clone()
        optimizer.step()
        return ([c.detach() for c in copies],
                [optimizer.state[c]["momentum_buffer"].clone() for c in copies])


# -- checkpoint and restore ----------------------------------------------------------------------------------------


@right("every tensor cloned by a helper of its own", only="checkpoint", points=5)
def cloned_by_a_helper():
    def _copied(value):
        if isinstance(value, torch.Tensor):
            return value.detach().clone()
        if isinstance(value, dict):
            return {k: _copied(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(_copied(v) for v in value)
        return value

    def checkpoint(model, optimizer, step):
        return {"model": _copied(model.state_dict()), "optimizer": _copied(optimizer.state_dict()), "step": step}

    def restore(model, optimizer, ckpt):
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        return ckpt["step"]


@right("the bytes torch.save writes, the step as a tensor", only="checkpoint", points=5)
def bytes_of_torch_save():
    def checkpoint(model, optimizer, step):
        buffer = io.BytesIO()
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, buffer)
        return {"blob": buffer.getvalue(), "step": torch.tensor(step)}

    def restore(model, optimizer, ckpt):
        saved = torch.load(io.BytesIO(ckpt["blob"]), weights_only=True)
        optimizer.load_state_dict(saved["optimizer"])
        model.load_state_dict(saved["model"])
        return int(ckpt["step"])


@wrong("checkpoint: state_dicts not copied", fails={"check_checkpoint_is_a_copy": "live tensors"}, edits="checkpoint")
def state_dicts_not_copied():
    def checkpoint(model, optimizer, step):
        return {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step}


@wrong("checkpoint: a shallow copy of the optimizer's state_dict", fails={"check_checkpoint_is_a_copy": "live tensors"},
       edits="checkpoint")
def shallow_optimizer_copy():
    def checkpoint(model, optimizer, step):
        return {"model": copy.deepcopy(model.state_dict()), "optimizer": dict(optimizer.state_dict()), "step": step}


@wrong("checkpoint: no optimizer state",
       fails={"check_checkpoint_resume_momentum": "optimizer's state was not restored"}, edits="checkpoint")
def no_optimizer_state():
    def checkpoint(model, optimizer, step):
        return {"model": copy.deepcopy(model.state_dict()), "step": step}

    def restore(model, optimizer, ckpt):
        model.load_state_dict(ckpt["model"])
        return ckpt["step"]


@wrong("checkpoint: step not restored", fails={"check_checkpoint_resume_momentum": "restore returned 0"},
       edits="checkpoint")
def step_not_restored():
    def restore(model, optimizer, ckpt):
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        return 0


@wrong("checkpoint: the model object saved", fails={"check_checkpoint_through_file": "weights_only=True) refused"},
       edits="checkpoint")
def model_object_saved():
    def checkpoint(model, optimizer, step):
        return {"model": copy.deepcopy(model), "optimizer": copy.deepcopy(optimizer.state_dict()), "step": step}

    def restore(model, optimizer, ckpt):
        model.load_state_dict(ckpt["model"].state_dict())
        optimizer.load_state_dict(ckpt["optimizer"])
        return ckpt["step"]


@wrong("checkpoint: load_state_dict(assign=True)",
       fails={"check_checkpoint_resume_momentum": "no longer holds the model's parameters"}, edits="checkpoint")
def load_with_assign():
    def restore(model, optimizer, ckpt):
        model.load_state_dict(ckpt["model"], assign=True)
        optimizer.load_state_dict(ckpt["optimizer"])
        return ckpt["step"]


@wrong("checkpoint: parameters only, no buffers", fails={"check_checkpoint_resume_momentum": "buffers"},
       edits="checkpoint")
def parameters_only():
    def checkpoint(model, optimizer, step):
        params = {name: p.detach().clone() for name, p in model.named_parameters()}
        return {"model": params, "optimizer": copy.deepcopy(optimizer.state_dict()), "step": step}

    def restore(model, optimizer, ckpt):
        model.load_state_dict(ckpt["model"], strict=False)
        optimizer.load_state_dict(ckpt["optimizer"])
        return ckpt["step"]


# -- RunningNorm ---------------------------------------------------------------------------------------------------
# The stretch task (bonus). Each wrong form is the reference RunningNorm with one piece changed: an edit of it.


@wrong("RunningNorm: plain tensor attributes", fails={"check_running_norm_buffers": "not a registered buffer"},
       edits="RunningNorm")
def running_norm_plain_tensor_attributes():
    class RunningNorm(nn.Module):
        def __init__(self, num_features: int, momentum: float = 0.1, eps: float = 1e-5) -> None:
            super().__init__()
            self.momentum = momentum
            self.eps = eps
            self.running_mean = torch.zeros(num_features)
            self.running_var = torch.ones(num_features)


@wrong("RunningNorm: frozen nn.Parameter statistics", fails={"check_running_norm_buffers": "must not be parameters"},
       edits="RunningNorm")
def running_norm_frozen_nn_parameter_statistics():
    class RunningNorm(nn.Module):
        def __init__(self, num_features: int, momentum: float = 0.1, eps: float = 1e-5) -> None:
            super().__init__()
            self.momentum = momentum
            self.eps = eps
            self.running_mean = nn.Parameter(torch.zeros(num_features), requires_grad=False)
            self.running_var = nn.Parameter(torch.ones(num_features), requires_grad=False)


@wrong("RunningNorm: biased running_var", fails={"check_running_norm_training": "m.running_var"}, edits="RunningNorm")
def running_norm_biased_running_var():
    class RunningNorm(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if not self.training:
                return (x - self.running_mean) / torch.sqrt(self.running_var + self.eps)
            samples = x.reshape(-1, x.shape[-1])
            n = samples.shape[0]  # noqa: F841 (the reference's n: its correction is gone)
            mean = samples.mean(dim=0)
            var = samples.var(dim=0, correction=0)
            with torch.no_grad():
                self.running_mean.lerp_(mean, self.momentum)
                self.running_var.lerp_(var, self.momentum)
            return (x - mean) / torch.sqrt(var + self.eps)


@wrong("RunningNorm: momentum reversed", fails={"check_running_norm_training": "m.running_mean"}, edits="RunningNorm")
def running_norm_momentum_reversed():
    class RunningNorm(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if not self.training:
                return (x - self.running_mean) / torch.sqrt(self.running_var + self.eps)
            samples = x.reshape(-1, x.shape[-1])
            n = samples.shape[0]
            mean = samples.mean(dim=0)
            var = samples.var(dim=0, correction=0)
            with torch.no_grad():
                self.running_mean.lerp_(mean, 1 - self.momentum)
                self.running_var.lerp_(var * n / (n - 1), 1 - self.momentum)
            return (x - mean) / torch.sqrt(var + self.eps)


@wrong("RunningNorm: statistics over dim 0 only", fails={"check_running_norm_training": "every dimension but the last"},
       edits="RunningNorm")
def running_norm_statistics_over_dim_0_only():
    class RunningNorm(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if not self.training:
                return (x - self.running_mean) / torch.sqrt(self.running_var + self.eps)
            samples = x
            n = samples.shape[0]
            mean = samples.mean(dim=0)
            var = samples.var(dim=0, correction=0)
            with torch.no_grad():
                self.running_mean.lerp_(mean, self.momentum)
                self.running_var.lerp_(var * n / (n - 1), self.momentum)
            return (x - mean) / torch.sqrt(var + self.eps)


@wrong("RunningNorm: unbiased variance to normalise", fails={"check_running_norm_training": "values differ"},
       edits="RunningNorm")
def running_norm_unbiased_variance_to_normalise():
    class RunningNorm(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if not self.training:
                return (x - self.running_mean) / torch.sqrt(self.running_var + self.eps)
            samples = x.reshape(-1, x.shape[-1])
            n = samples.shape[0]
            mean = samples.mean(dim=0)
            var = samples.var(dim=0)
            with torch.no_grad():
                self.running_mean.lerp_(mean, self.momentum)
                self.running_var.lerp_(var * n / (n - 1), self.momentum)
            return (x - mean) / torch.sqrt(var + self.eps)


@wrong("RunningNorm: eps outside the square root", fails={"check_running_norm_training": "values differ"},
       edits="RunningNorm")
def running_norm_eps_outside_the_square_root():
    class RunningNorm(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if not self.training:
                return (x - self.running_mean) / torch.sqrt(self.running_var + self.eps)
            samples = x.reshape(-1, x.shape[-1])
            n = samples.shape[0]
            mean = samples.mean(dim=0)
            var = samples.var(dim=0, correction=0)
            with torch.no_grad():
                self.running_mean.lerp_(mean, self.momentum)
                self.running_var.lerp_(var * n / (n - 1), self.momentum)
            return (x - mean) / (torch.sqrt(var) + self.eps)


@wrong("RunningNorm: eval mode ignored", fails={"check_running_norm_eval": "in eval mode"}, edits="RunningNorm")
def running_norm_eval_mode_ignored():
    class RunningNorm(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            samples = x.reshape(-1, x.shape[-1])
            n = samples.shape[0]
            mean = samples.mean(dim=0)
            var = samples.var(dim=0, correction=0)
            with torch.no_grad():
                self.running_mean.lerp_(mean, self.momentum)
                self.running_var.lerp_(var * n / (n - 1), self.momentum)
            return (x - mean) / torch.sqrt(var + self.eps)


@wrong("RunningNorm: update records autograd history", fails={"check_running_norm_gradient": "buffers"},
       edits="RunningNorm")
def running_norm_update_records_autograd_history():
    class RunningNorm(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if not self.training:
                return (x - self.running_mean) / torch.sqrt(self.running_var + self.eps)
            samples = x.reshape(-1, x.shape[-1])
            n = samples.shape[0]
            mean = samples.mean(dim=0)
            var = samples.var(dim=0, correction=0)
            self.running_mean = self.running_mean.lerp(mean, self.momentum)
            self.running_var = self.running_var.lerp(var * n / (n - 1), self.momentum)
            return (x - mean) / torch.sqrt(var + self.eps)


@wrong("RunningNorm: batch statistics detached", fails={"check_running_norm_gradient": "x.grad"}, edits="RunningNorm")
def running_norm_batch_statistics_detached():
    class RunningNorm(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if not self.training:
                return (x - self.running_mean) / torch.sqrt(self.running_var + self.eps)
            samples = x.reshape(-1, x.shape[-1])
            n = samples.shape[0]
            mean = samples.mean(dim=0)
            var = samples.var(dim=0, correction=0)
            with torch.no_grad():
                self.running_mean.lerp_(mean, self.momentum)
                self.running_var.lerp_(var * n / (n - 1), self.momentum)
            return (x - mean.detach()) / torch.sqrt(var.detach() + self.eps)


@wrong("RunningNorm: float32 hard-coded", fails={"check_running_norm_state": "double"}, edits="RunningNorm")
def running_norm_float32_hard_coded():
    class RunningNorm(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if not self.training:
                return (x - self.running_mean) / torch.sqrt(self.running_var + self.eps)
            samples = x.reshape(-1, x.shape[-1]).float()
            n = samples.shape[0]
            mean = samples.mean(dim=0)
            var = samples.var(dim=0, correction=0)
            with torch.no_grad():
                self.running_mean.lerp_(mean, self.momentum)
                self.running_var.lerp_(var * n / (n - 1), self.momentum)
            return (x - mean) / torch.sqrt(var + self.eps)


# -- RunningNorm: correct forms ------------------------------------------------------------------------------------


@right("a subclass of nn.BatchNorm1d", only="running_norm", bonus=5)
def a_subclass_of_nn_batchnorm1d():
    class RunningNorm(nn.BatchNorm1d):
        def __init__(self, num_features, momentum=0.1, eps=1e-5):
            super().__init__(num_features, eps=eps, momentum=momentum, affine=False)

        def forward(self, x):
            return super().forward(x.reshape(-1, x.shape[-1])).reshape(x.shape)


@right("F.batch_norm on its own buffers", only="running_norm", bonus=5)
def f_batch_norm_on_its_own_buffers():
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


@right("var_mean and buffers reassigned from detached statistics", only="running_norm", bonus=5)
def var_mean_and_buffers_reassigned_from_detached_statistics():
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
