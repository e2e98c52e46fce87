"""Chapter 01_basics: named wrong implementations of its answer cells, and other correct forms.

Each function's body is the code of an answer cell, as a student would write it (autograder/course/cases.py
reads and checks it); the imports below are those of the notebook's imports cell that the code uses.
`python -m autograder selftest` grades the wrong ones, tests/chapters/test_every_chapter.py all of them.
Not shipped to Gradescope (autograder/course/bundle.py).
"""

import math

import torch
import torch.nn.functional as F

from autograder.judging.authoring import right, wrong

# -- grad_of -------------------------------------------------------------------------------------------------------


@wrong("backward() fills x.grad", fails={"check_grad_of_leaves_x_grad_alone": "x.grad"})
def backward_fills_x_grad():
    def grad_of(fn, x):
        if isinstance(x, tuple):
            copies = tuple(t.detach().requires_grad_(True) for t in x)
            fn(*copies).backward()
            return tuple(torch.zeros_like(t) if t.grad is None else t.grad for t in copies)
        x.requires_grad_(True)
        fn(x).backward()
        return x.grad


@wrong("requires_grad left on", fails={"check_grad_of_keeps_requires_grad": "requires_grad is True"})
def requires_grad_left_on():
    def grad_of(fn, x):
        inputs = x if isinstance(x, tuple) else (x,)
        for t in inputs:
            t.requires_grad_(True)
        grads = torch.autograd.grad(fn(*inputs), inputs, allow_unused=True, materialize_grads=True)
        return grads if isinstance(x, tuple) else grads[0]


@wrong("finite differences", fails={"check_grad_of_analytic": "values differ"}, example="ben")
def finite_differences():
    def grad_of(fn, x):
        eps = 1e-3
        flat = x.detach().reshape(-1)
        grad = torch.zeros_like(flat)
        for i in range(flat.numel()):
            step = torch.zeros_like(flat)
            step[i] = eps
            grad[i] = (fn((flat + step).reshape(x.shape)) - fn((flat - step).reshape(x.shape))) / (2 * eps)
        return grad.reshape(x.shape)


@wrong("float32 gradient", fails={"check_grad_of_matches_torch_func": "dtype torch.float32"})
def float32_gradient():
    def grad_of(fn, x):
        inputs = x if isinstance(x, tuple) else (x,)
        copies = tuple(t.detach().float().requires_grad_(True) for t in inputs)
        grads = torch.autograd.grad(fn(*copies), copies, allow_unused=True, materialize_grads=True)
        return grads if isinstance(x, tuple) else grads[0]


@wrong("a single tensor only", fails={"check_grad_of_guide_example": "'tuple' object has no attribute 'detach'"})
def single_tensor_only():
    """The exercise as it was: one tensor x, nothing else."""
    def grad_of(fn, x):
        x_ = x.detach().requires_grad_(True)
        (grad,) = torch.autograd.grad(fn(x_), x_)
        return grad


@wrong("fn called with the tuple", fails={"check_grad_of_guide_example": "fn(*x)"})
def fn_called_with_the_tuple():
    def grad_of(fn, x):
        inputs = x if isinstance(x, tuple) else (x,)
        copies = tuple(t.detach().requires_grad_(True) for t in inputs)
        grads = torch.autograd.grad(fn(copies if isinstance(x, tuple) else copies[0]), copies, allow_unused=True,
                                    materialize_grads=True)
        return grads if isinstance(x, tuple) else grads[0]


@wrong("always a tuple", fails={"check_grad_of_guide_example": "a tuple for a single tensor x"})
def always_a_tuple():
    def grad_of(fn, x):
        inputs = x if isinstance(x, tuple) else (x,)
        copies = tuple(t.detach().requires_grad_(True) for t in inputs)
        return torch.autograd.grad(fn(*copies), copies, allow_unused=True, materialize_grads=True)


@wrong("a list back", fails={"check_grad_of_several_inputs": "a list of"})
def a_list_back():
    def grad_of(fn, x):
        inputs = x if isinstance(x, tuple) else (x,)
        copies = [t.detach().requires_grad_(True) for t in inputs]
        grads = [g if g is not None else torch.zeros_like(t)
                 for g, t in zip(torch.autograd.grad(fn(*copies), copies, allow_unused=True), inputs, strict=True)]
        return grads if isinstance(x, tuple) else grads[0]


@wrong("unused input raises", fails={"check_grad_of_unused_inputs": "allow_unused=True"})
def unused_input_raises():
    def grad_of(fn, x):
        inputs = x if isinstance(x, tuple) else (x,)
        copies = tuple(t.detach().requires_grad_(True) for t in inputs)
        grads = torch.autograd.grad(fn(*copies), copies)
        return grads if isinstance(x, tuple) else grads[0]


@wrong("None for an unused input", fails={"check_grad_of_unused_inputs": "None in place of input"})
def none_for_an_unused_input():
    def grad_of(fn, x):
        inputs = x if isinstance(x, tuple) else (x,)
        copies = tuple(t.detach().requires_grad_(True) for t in inputs)
        grads = torch.autograd.grad(fn(*copies), copies, allow_unused=True)
        return grads if isinstance(x, tuple) else grads[0]


@wrong("float32 zeros for an unused input", fails={"check_grad_of_unused_inputs": "dtype torch.float32"})
def float32_zeros_for_an_unused_input():
    def grad_of(fn, x):
        inputs = x if isinstance(x, tuple) else (x,)
        copies = tuple(t.detach().requires_grad_(True) for t in inputs)
        grads = torch.autograd.grad(fn(*copies), copies, allow_unused=True)
        grads = tuple(torch.zeros(t.shape) if g is None else g for g, t in zip(grads, inputs, strict=True))
        return grads if isinstance(x, tuple) else grads[0]


@wrong("one copy per call, not per input", fails={"check_grad_of_keeps_requires_grad": "changed the caller's tensors"})
def first_input_copied_only():
    """Copies the first input and flips the flag on the others in place."""
    def grad_of(fn, x):
        if not isinstance(x, tuple):
            x_ = x.detach().requires_grad_(True)
            return torch.autograd.grad(fn(x_), x_)[0]
        copies = (x[0].detach().requires_grad_(True), *(t.requires_grad_(True) for t in x[1:]))
        return torch.autograd.grad(fn(*copies), copies, allow_unused=True, materialize_grads=True)


# -- grad_of: correct forms ----------------------------------------------------------------------------------------


@right("grad_of: None replaced by zeros_like", only="grad_of", points=8)
def none_replaced_by_zeros():
    def grad_of(fn, x):
        if isinstance(x, torch.Tensor):
            return grad_of(lambda t: fn(t), (x,))[0]
        copies = tuple(t.detach().requires_grad_(True) for t in x)
        grads = torch.autograd.grad(fn(*copies), copies, allow_unused=True)
        return tuple(torch.zeros_like(t) if g is None else g for g, t in zip(grads, x, strict=True))


@right("grad_of: torch.func.grad with argnums", only="grad_of", points=8)
def torch_func_argnums():
    def grad_of(fn, x):
        if isinstance(x, tuple):
            return torch.func.grad(fn, argnums=tuple(range(len(x))))(*(t.detach() for t in x))
        return torch.func.grad(fn)(x.detach())


@right("grad_of: backward() on private copies", only="grad_of", points=8)
def backward_on_copies():
    def grad_of(fn, x):
        inputs = x if isinstance(x, tuple) else (x,)
        copies = [t.detach().clone().requires_grad_(True) for t in inputs]
        fn(*copies).backward()
        grads = tuple(torch.zeros_like(t) if t.grad is None else t.grad for t in copies)
        return grads if isinstance(x, tuple) else grads[0]


@right("grad_of: torch.autograd.functional.vjp", only="grad_of", points=8)
def functional_vjp():
    def grad_of(fn, x):
        return torch.autograd.functional.vjp(fn, x)[1]


# -- fit_polynomial ------------------------------------------------------------------------------------------------


@wrong("lowest power first", fails={"check_fit_polynomial_guide_example": "reverse order"})
def lowest_power_first():
    def fit_polynomial(x, y, degree=2, steps=1000, lr=0.1):
        features = x.unsqueeze(1) ** torch.arange(degree, -1, -1, device=x.device)
        w = torch.zeros(features.shape[1], device=x.device, requires_grad=True)
        opt = torch.optim.Adam([w], lr=lr)
        for _ in range(steps):
            loss = F.mse_loss(features @ w, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        return w.detach().flip(0)


@wrong("one coefficient short", fails={"check_fit_polynomial_degrees_1_and_3": "instead of [2]"})
def one_coefficient_short():
    def fit_polynomial(x, y, degree=2, steps=1000, lr=0.1):
        features = x.unsqueeze(1) ** torch.arange(degree - 1, -1, -1, device=x.device)
        w = torch.zeros(features.shape[1], device=x.device, requires_grad=True)
        opt = torch.optim.Adam([w], lr=lr)
        for _ in range(steps):
            loss = F.mse_loss(features @ w, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        return w.detach()


@wrong("too few steps", fails={"check_fit_polynomial_random_quadratics": "values differ"})
def too_few_steps():
    def fit_polynomial(x, y, degree=2, steps=1000, lr=0.1):
        features = x.unsqueeze(1) ** torch.arange(degree, -1, -1, device=x.device)
        w = torch.zeros(features.shape[1], device=x.device, requires_grad=True)
        opt = torch.optim.Adam([w], lr=lr)
        for _ in range(100):
            loss = F.mse_loss(features @ w, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        return w.detach()


@wrong("lr ignored", fails={"check_fit_polynomial_uses_steps_and_lr": "not the lr="})
def lr_ignored():
    def fit_polynomial(x, y, degree=2, steps=1000, lr=0.1):
        features = x.unsqueeze(1) ** torch.arange(degree, -1, -1, device=x.device)
        w = torch.zeros(features.shape[1], device=x.device, requires_grad=True)
        opt = torch.optim.Adam([w], lr=0.1)
        for _ in range(steps):
            loss = F.mse_loss(features @ w, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        return w.detach()


@wrong("through degree + 1 samples", fails={"check_fit_polynomial_noisy_data": "values differ"})
def through_degree_plus_1_samples():
    def fit_polynomial(x, y, degree=2, steps=1000, lr=0.1):
        features = x[: degree + 1].unsqueeze(1) ** torch.arange(degree, -1, -1, device=x.device)
        return torch.linalg.solve(features, y[: degree + 1])


@wrong("closed form (torch.linalg.lstsq)", fails={"check_fit_polynomial_uses_steps_and_lr": "least-squares"})
def closed_form_lstsq():
    """Every coefficient right on every exact and noisy fit, by a method the task rules out."""
    def fit_polynomial(x, y, degree=2, steps=1000, lr=0.1):
        features = x.unsqueeze(1) ** torch.arange(degree, -1, -1, device=x.device)
        return torch.linalg.lstsq(features.double(), y.double().unsqueeze(1)).solution.squeeze(1).to(x.dtype)


@wrong("Adam at its own rate, to convergence", fails={"check_fit_polynomial_uses_steps_and_lr": "least-squares"})
def adam_own_rate_to_convergence():
    def fit_polynomial(x, y, degree=2, steps=1000, lr=0.1):
        features = x.unsqueeze(1) ** torch.arange(degree, -1, -1, device=x.device)
        w = torch.zeros(degree + 1, dtype=x.dtype, device=x.device, requires_grad=True)
        opt = torch.optim.Adam([w], lr=0.5)
        for _ in range(5000):
            loss = F.mse_loss(features @ w, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        return w.detach()


@right("small random start, centred and scaled by max |x - m|", only="fit_polynomial and not noisy and not quadratics",
       points=5)
def random_start_scaled_by_spread():
    def fit_polynomial(x, y, degree=2, steps=1000, lr=0.1):
        m = x.mean()
        s = (x - m).abs().max()
        powers = torch.arange(degree, -1, -1, device=x.device)
        features = ((x - m) / s).unsqueeze(1) ** powers
        c = (0.01 * torch.rand(degree + 1, dtype=x.dtype, device=x.device)).requires_grad_(True)
        opt = torch.optim.Adam([c], lr=lr)
        for _ in range(steps):
            loss = F.mse_loss(features @ c, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        low_first = c.detach().double().flip(0) / s.double() ** torch.arange(degree + 1, device=x.device)
        w = torch.zeros(degree + 1, dtype=torch.float64, device=x.device)
        for k in range(degree + 1):
            for j in range(k + 1):
                w[j] += low_first[k] * math.comb(k, j) * (-m.double()) ** (k - j)
        return w.flip(0).to(x.dtype)


@wrong("SGD instead of Adam", fails={"check_fit_polynomial_uses_steps_and_lr": "plain SGD"})
def sgd_instead_of_adam():
    def fit_polynomial(x, y, degree=2, steps=1000, lr=0.1):
        features = x.unsqueeze(1) ** torch.arange(degree, -1, -1, device=x.device)
        w = torch.zeros(features.shape[1], device=x.device, requires_grad=True)
        opt = torch.optim.SGD([w], lr=lr)
        for _ in range(steps):
            loss = F.mse_loss(features @ w, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        return w.detach()


@right("centred and scaled, mapped back by Horner's rule", only="fit_polynomial", points=8)
def centred_scaled_horner():
    def fit_polynomial(x, y, degree=2, steps=1000, lr=0.1):
        m, s = x.mean(), x.std()
        t = (x - m) / s
        features = t.unsqueeze(1) ** torch.arange(degree, -1, -1, device=x.device)
        c = torch.zeros(degree + 1, dtype=x.dtype, device=x.device, requires_grad=True)
        opt = torch.optim.Adam([c], lr=lr)
        for _ in range(steps):
            loss = F.mse_loss(features @ c, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        # p(x) = (...(c_d t + c_(d-1)) t + ...) t + c_0 with t = (x - m) / s, highest power first
        w = torch.zeros(1, dtype=torch.float64, device=x.device)
        zero = torch.zeros(1, dtype=torch.float64, device=x.device)
        for coefficient in c.detach().double():
            w = (torch.cat([w, zero]) - m.double() * torch.cat([zero, w])) / s.double()
            w[-1] += coefficient
        return w[1:].to(x.dtype)


@right("centred, mapped back by the binomial theorem", only="fit_polynomial", points=8)
def centred_binomial():
    def fit_polynomial(x, y, degree=2, steps=1000, lr=0.1):
        m = x.mean()
        powers = torch.arange(degree, -1, -1, device=x.device)
        features = (x - m).unsqueeze(1) ** powers
        c = torch.zeros(degree + 1, dtype=x.dtype, device=x.device, requires_grad=True)
        opt = torch.optim.Adam([c], lr=lr)
        for _ in range(steps):
            loss = F.mse_loss(features @ c, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        # (x - m)^k = sum_j comb(k, j) x^j (-m)^(k - j)
        low_first = c.detach().double().flip(0)
        w = torch.zeros(degree + 1, dtype=torch.float64, device=x.device)
        for k in range(degree + 1):
            for j in range(k + 1):
                w[j] += low_first[k] * math.comb(k, j) * (-m.double()) ** (k - j)
        return w.flip(0).to(x.dtype)


@wrong("fitted on scaled x, coefficients of t returned", fails={"check_fit_polynomial_guide_example": "values differ"})
def scaled_not_mapped_back():
    def fit_polynomial(x, y, degree=2, steps=1000, lr=0.1):
        t = x / x.abs().max()
        features = t.unsqueeze(1) ** torch.arange(degree, -1, -1, device=x.device)
        w = torch.zeros(degree + 1, device=x.device, requires_grad=True)
        opt = torch.optim.Adam([w], lr=lr)
        for _ in range(steps):
            loss = F.mse_loss(features @ w, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        return w.detach()


@wrong("scaled by max |x|, mapped back, out of steps",
       fails={"check_fit_polynomial_noisy_data": "divide by the standard deviation"})
def scaled_by_max_out_of_steps():
    """Right in x, but on [-2, 2] the coefficient of t^k is 2^k times that of x^k: Adam, about lr per step, does
    not reach them in the default 1000 steps (section 3 of the notebook says so)."""
    def fit_polynomial(x, y, degree=2, steps=1000, lr=0.1):
        s = x.abs().max()
        powers = torch.arange(degree, -1, -1, device=x.device)
        features = (x / s).unsqueeze(1) ** powers
        c = torch.zeros(degree + 1, dtype=x.dtype, device=x.device, requires_grad=True)
        opt = torch.optim.Adam([c], lr=lr)
        for _ in range(steps):
            loss = F.mse_loss(features @ c, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        return c.detach() / s**powers


# -- hessian_vector_product ----------------------------------------------------------------------------------------
# The stretch task (bonus).


@wrong("HVP: no create_graph", fails={"check_hvp_quadratic_form": "does not require grad"})
def hvp_no_create_graph():
    def hessian_vector_product(fn, x, v):
        x_ = x.detach().requires_grad_(True)
        (g,) = torch.autograd.grad(fn(x_), x_)
        return torch.autograd.grad((g * v).sum(), x_)[0]


@wrong("HVP: gradient times v", fails={"check_hvp_matches_torch_func": "values differ"})
def hvp_gradient_times_v():
    def hessian_vector_product(fn, x, v):
        x_ = x.detach().requires_grad_(True)
        (g,) = torch.autograd.grad(fn(x_), x_)
        return g * v


@wrong("HVP: a linear fn raises", fails={"check_hvp_constant_gradient": "does not depend on x"})
def hvp_a_linear_fn_raises():
    def hessian_vector_product(fn, x, v):
        x_ = x.detach().requires_grad_(True)
        (g,) = torch.autograd.grad(fn(x_), x_, create_graph=True)
        return torch.autograd.grad(g, x_, v)[0]


@wrong("HVP: result keeps its graph", fails={"check_hvp_leaves_x_alone": "requires_grad=True"})
def hvp_result_keeps_its_graph():
    def hessian_vector_product(fn, x, v):
        x_ = x.detach().requires_grad_(True)
        (g,) = torch.autograd.grad(fn(x_), x_, create_graph=True)
        if not g.requires_grad:
            return torch.zeros_like(x)
        return torch.autograd.grad(g, x_, v, create_graph=True)[0]


@wrong("HVP: requires_grad left on", fails={"check_hvp_leaves_x_alone": "changed the caller's tensor"})
def hvp_requires_grad_left_on():
    def hessian_vector_product(fn, x, v):
        x.requires_grad_(True)
        (g,) = torch.autograd.grad(fn(x), x, create_graph=True)
        if not g.requires_grad:
            return torch.zeros_like(x)
        return torch.autograd.grad(g, x, v)[0]


@wrong("HVP: the full Hessian", fails={"check_hvp_large_input": "Never build the Hessian"})
def hvp_the_full_hessian():
    def hessian_vector_product(fn, x, v):
        h = torch.func.hessian(fn)(x.detach())
        return (h.reshape(x.numel(), x.numel()) @ v.reshape(-1)).reshape(x.shape)


@wrong("HVP: finite differences", fails={"check_hvp_quadratic_form": "values differ"})
def hvp_finite_differences():
    def hessian_vector_product(fn, x, v):
        def gradient(t):
            t = t.detach().requires_grad_(True)
            return torch.autograd.grad(fn(t), t)[0]
        return (gradient(x + 1e-3 * v) - gradient(x - 1e-3 * v)) / 2e-3


# -- hessian_vector_product: correct forms -------------------------------------------------------------------------


@right("dot product, linear case caught", only="hvp", bonus=5)
def dot_product_linear_case_caught():
    def hessian_vector_product(fn, x, v):
        x_ = x.detach().requires_grad_(True)
        (g,) = torch.autograd.grad(fn(x_), x_, create_graph=True)
        try:
            return torch.autograd.grad((g * v).sum(), x_)[0]
        except RuntimeError:
            return torch.zeros_like(x)


@right("torch.func forward-over-reverse", only="hvp", bonus=5)
def torch_func_forward_over_reverse():
    def hessian_vector_product(fn, x, v):
        return torch.func.jvp(torch.func.grad(fn), (x.detach(),), (v,))[1]


@right("torch.func reverse-over-reverse", only="hvp", bonus=5)
def torch_func_reverse_over_reverse():
    def hessian_vector_product(fn, x, v):
        return torch.func.vjp(torch.func.grad(fn), x.detach())[1](v)[0]


@right("torch.autograd.functional.hvp", only="hvp", bonus=5)
def torch_autograd_functional_hvp():
    def hessian_vector_product(fn, x, v):
        return torch.autograd.functional.hvp(fn, x.detach(), v)[1]
