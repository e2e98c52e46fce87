"""The rules 07_numerical_stability.ipynb states for its graded tasks, mapped to the checks that keep them
(autograder/judging/rules.py; tests/chapters/test_rules.py holds this list to the notebook).
"""

from autograder.judging.authoring import HOW_GRADED, Evidence, NotARule, Rule

OUTCOME, SOURCE = Evidence.OUTCOME, Evidence.SOURCE

RULES = [
    Rule('softmax', 'stable for any finite logits:',
         ('check_softmax_rows_far_apart', 'check_softmax_huge_and_infinite_logits'), (OUTCOME, OUTCOME)),
    Rule('softmax', '**The rule of this notebook',
         ('check_softmax_by_hand',), (SOURCE,)),
    Rule('softmax', 'That code must not name a',
         ('check_softmax_by_hand',), (SOURCE,)),
    Rule('softmax', 'The grader cannot tell your',
         ('check_softmax_by_hand',), (SOURCE,)),
    Rule('softmax', 'Every function must be called',
         ('check_softmax_by_hand',), (SOURCE,)),
    Rule('softmax', "Stay in the input's dtype",
         ('check_softmax_keeps_dtype',), (OUTCOME,)),
    Rule('softmax_cross_entropy', 'Do for the softmax what the',
         ('check_xent_extreme_logits',), (OUTCOME,)),
    Rule('softmax_cross_entropy', 'right on batches: a reduction',
         ('check_xent_random_batches',), (OUTCOME,)),
    Rule('softmax_cross_entropy', 'Keep `keepdim=True` on everything you',
         ('check_xent_gradient',), (OUTCOME,)),
    Rule('log_softmax', '`log softmax(logits)` along `dim`, stable',
         ('check_log_softmax_values',), (OUTCOME,)),
    Rule('log_softmax', '**backward**: your own formula, from',
         ('check_log_softmax_own_backward',), (SOURCE,)),
    Rule('log_softmax', 'It must be exact and finite',
         ('check_log_softmax_gradient', 'check_log_softmax_gradient_extremes'), (OUTCOME, OUTCOME)),
    Rule('log_softmax', '`log_softmax` calling its `.apply`; exactly',
         ('check_log_softmax_own_backward',), (SOURCE,)),
]

NOT_RULES = [
    *HOW_GRADED,
    NotARule("The rule's own check is worth",
             'says what grading does, not what the code must do'),
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
