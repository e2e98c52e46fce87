"""The rules 07_numerical_stability.ipynb states for its graded tasks, mapped to the checks that keep them
(autograder/judging/rules.py; tests/chapters/test_rules.py holds this list to the notebook).
"""

from autograder.judging.authoring import HOW_GRADED, Evidence, NotARule, Rule

OUTCOME, SOURCE = Evidence.OUTCOME, Evidence.SOURCE
# The rule stated above Exercise 1 holds for the other two tasks: their statements say so and point back to it.
BY_HAND_TOO = ('softmax_cross_entropy', 'log_softmax')

RULES = [
    Rule('softmax', 'any finite logits: no overflow at `1e4`',
         ('check_softmax_rows_far_apart', 'check_softmax_huge_and_infinite_logits'), (OUTCOME, OUTCOME)),
    Rule('softmax', 'reads your code, not only its results.',
         ('check_softmax_by_hand', 'check_xent_by_hand', 'check_log_softmax_own_backward'), (SOURCE,) * 3,
         also=BY_HAND_TOO),
    Rule('softmax', 'That code must not name a',
         ('check_softmax_by_hand', 'check_xent_by_hand', 'check_log_softmax_own_backward'), (SOURCE,) * 3,
         also=BY_HAND_TOO),
    Rule('softmax', 'do not give a method or attribute of yours such a name',
         ('check_softmax_by_hand', 'check_xent_by_hand', 'check_log_softmax_own_backward'), (SOURCE,) * 3,
         also=BY_HAND_TOO),
    Rule('softmax', 'Every function must be called by',
         ('check_softmax_by_hand', 'check_xent_by_hand', 'check_log_softmax_own_backward'), (SOURCE,) * 3,
         also=BY_HAND_TOO),
    Rule('softmax', "the input's dtype (no `.float()` or `.double()`).",
         ('check_softmax_keeps_dtype',), (OUTCOME,)),
    Rule('softmax_cross_entropy', 'compute the result without ever forming a',
         ('check_xent_extreme_logits',), (OUTCOME,)),
    Rule('softmax_cross_entropy', '`[B, C]` logits must keep its axis',
         ('check_xent_random_batches',), (OUTCOME,)),
    Rule('softmax_cross_entropy', 'differentiable tensor operations only (no `.detach()`, `.item()`',
         ('check_xent_gradient',), (OUTCOME,)),
    Rule('log_softmax', 'far apart), `-inf` exactly where a logit',
         ('check_log_softmax_values',), (OUTCOME,)),
    Rule('log_softmax', 'from **one saved tensor** that is not the input',
         ('check_log_softmax_own_backward',), (SOURCE,)),
    Rule('log_softmax', 'It must be exact and',
         ('check_log_softmax_gradient', 'check_log_softmax_gradient_extremes'), (OUTCOME, OUTCOME)),
    Rule('log_softmax', 'calling its `.apply`; exactly one `ctx.save_for_backward(...)` of',
         ('check_log_softmax_own_backward',), (SOURCE,)),
]

NOT_RULES = [
    *HOW_GRADED,
    NotARule("The rule's own check is worth",
             'says what grading does, not what the code must do'),
    NotARule('`torch.logsumexp`, `amax`, `max`, `exp`, `log`',
             'a permission: what the rule allows'),
    NotARule('The figure above says two',
             'lesson prose: how PyTorch behaves'),
    NotARule('The largest exponent is then',
             'lesson prose: how PyTorch behaves'),
    NotARule("(The guide's `torch.reduce_max` does not",
             "describes the guide's code or a cell that is not graded"),
    NotARule('Give `dim` and `keepdim=True` to',
             'a hint: one way to meet the task, not a rule of it'),
    NotARule('An entry of `-inf` needs no',
             'a hint: one way to meet the task, not a rule of it'),
    NotARule("The guide's own version drops",
             "describes the guide's code or a cell that is not graded"),
    NotARule('While this exercise is graded,',
             'says what grading does, not what the code must do'),
    NotARule('`log softmax(x)_i = x_i -',
             'a hint: one way to meet the task, not a rule of it'),
    NotARule("Subtract the row's maximum before",
             'a hint: one way to meet the task, not a rule of it'),
    NotARule('The value is right and the',
             'lesson prose: how PyTorch behaves'),
    NotARule('The derivative of the sigmoid',
             'lesson prose: how PyTorch behaves'),
    NotARule('`backward` never builds the Jacobian.',
             'lesson prose: how PyTorch behaves'),
    NotARule('Arguments of `forward` that are',
             'lesson prose: how PyTorch behaves'),
]
