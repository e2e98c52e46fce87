"""The rules 01_basics.ipynb states for its graded tasks, mapped to the checks that keep them
(autograder/judging/rules.py; tests/chapters/test_rules.py holds this list to the notebook).
"""

from autograder.judging.authoring import HOW_GRADED, Evidence, NotARule, Rule

OUTCOME, KERNEL = Evidence.OUTCOME, Evidence.KERNEL

RULES = [
    Rule('grad_of', 'stored there, which must not leak into',
         ('check_grad_of_keeps_requires_grad', 'check_grad_of_leaves_x_grad_alone'), (OUTCOME, OUTCOME)),
    Rule('grad_of', 'You may not switch that',
         ('check_grad_of_keeps_requires_grad',), (OUTCOME,)),
    Rule('grad_of', 'gets a gradient of zeros, not `None` and not an error',
         ('check_grad_of_unused_inputs',), (OUTCOME,)),
    Rule('fit_polynomial', 'error with `torch.optim.Adam` at learning rate `lr`,',
         ('check_fit_polynomial_uses_steps_and_lr',), (OUTCOME,)),
    Rule('fit_polynomial', '100 to 200 only if you pass',
         ('check_fit_polynomial_uses_steps_and_lr',), (OUTCOME,)),
    Rule('fit_polynomial', 'Your coefficients must land where its',
         ('check_fit_polynomial_uses_steps_and_lr',), (OUTCOME,)),
    Rule('hessian_vector_product', 'never build `H`: grading',
         ('check_hvp_large_input',), (KERNEL,)),
    Rule('hessian_vector_product', 'use autograd, not finite differences;',
         ('check_hvp_quadratic_form', 'check_hvp_matches_torch_func'), (OUTCOME, OUTCOME)),
    Rule('hessian_vector_product', 'the answer is zeros, not an error',
         ('check_hvp_constant_gradient',), (OUTCOME,)),
    Rule('hessian_vector_product', 'tensor that does not require grad, holding',
         ('check_hvp_leaves_x_alone',), (OUTCOME,)),
]

NOT_RULES = [
    *HOW_GRADED,
    NotARule('`torch.autograd.grad(output, inputs)` differentiates only with',
             'lesson prose: how PyTorch behaves'),
    NotARule('Build new tensors that share the inputs',
             'a hint: one way to meet the task, not a rule of it'),
    NotARule('`autograd.grad` accepts a tuple of inputs',
             'lesson prose: how PyTorch behaves'),
    NotARule('Then look in `help(torch.autograd.grad)`',
             'an instruction or a question to the reader'),
    NotARule('Grading (8 points) fits polynomials',
             'says what grading does, not what the code must do'),
]
