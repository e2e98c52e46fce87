"""The rules 04_overloaded_ops.ipynb states for its graded tasks, mapped to the checks that keep them
(autograder/judging/rules.py; tests/chapters/test_rules.py holds this list to the notebook).
"""

from autograder.judging.authoring import HOW_GRADED, Evidence, NotARule, Rule

OUTCOME, CLOCK, SOURCE = Evidence.OUTCOME, Evidence.CLOCK, Evidence.SOURCE

RULES = [
    Rule('running_diff', '`torch.arange`, nothing else (no other torch function',
         ('check_running_diff_rule',), (SOURCE,)),
    Rule('column_means', 'and `.mean` are not allowed anyway).',
         ('check_column_means_rule',), (SOURCE,)),
    Rule('column_means', '`torch.arange`, nothing else (no other torch function',
         ('check_column_means_rule',), (SOURCE,)),
    Rule('band', '`torch.arange`, nothing else (no other torch function',
         ('check_band_rule',), (SOURCE,)),
    Rule('reverse', '`torch.arange`, nothing else (no other torch function',
         ('check_reverse_rule',), (SOURCE,)),
    Rule('polynomial', '`torch.arange`, nothing else (no other torch function',
         ('check_polynomial_rule',), (SOURCE,)),
    Rule('exactly_one_positive', 'shape, True where exactly one of `x`,',
         ('check_exactly_one_positive_random',), (OUTCOME,)),
    Rule('exactly_one_positive', '`torch.arange`, nothing else (no other torch function',
         ('check_exactly_one_positive_rule',), (SOURCE,)),
    Rule('running_total', '`torch.arange`, nothing else (no other torch function',
         ('check_running_total_rule',), (SOURCE,)),
    Rule('running_total', 'and `.sum` are not allowed anyway).',
         ('check_running_total_rule',), (SOURCE,)),
    Rule('repeat_each', '`torch.arange`, nothing else (no other torch function',
         ('check_repeat_each_rule',), (SOURCE,)),
    # One check keeps the no-loop rules on two kinds of evidence: the clock fails a loop of many steps, the
    # reading of the code a loop of any length (over the shorter axis, one step on the timed inputs).
    Rule('row_sum', 'no loop over the rows or the',
         ('check_row_sum_speed', 'check_row_sum_speed'), (CLOCK, SOURCE)),
    Rule('row_sum', 'Grading also reads the code `row_sum` runs',
         ('check_row_sum_speed',), (SOURCE,)),
    Rule('row_sum', 'yours may take at most **8 times**',
         ('check_row_sum_speed',), (CLOCK,)),
    Rule('pairwise_sq_distances', "operators and broadcasting, not the library's distance",
         ('check_pairwise_vectorized',), (SOURCE,)),
    Rule('pairwise_sq_distances', 'no loop over the rows of `x`',
         ('check_pairwise_vectorized', 'check_pairwise_vectorized'), (CLOCK, SOURCE)),
    Rule('Dual', 'calls `d.__rsub__(c)`, which must compute `c -',
         ('check_dual_constants_on_the_left',), (OUTCOME,)),
]

NOT_RULES = [
    *HOW_GRADED,
    NotARule("`torch.ones` is not allowed, and the ones must have",
             'a hint: one way to meet the task, not a rule of it (the rule is stated above it)'),
    NotARule('Write the four cases of two bools',
             'an instruction or a question to the reader'),
    NotARule('PyTorch slices take no negative',
             'lesson prose: how PyTorch behaves'),
    NotARule('Exactly one of two bools is',
             'a hint: one way to meet the task, not a rule of it'),
    NotARule("`|` says 'at least one', `&`",
             'a hint: one way to meet the task, not a rule of it'),
    NotARule('It reports the `unbind` loop',
             'lesson prose: how PyTorch behaves'),
    NotARule('The loop is slow not because',
             'lesson prose: how PyTorch behaves'),
    NotARule("Grading's timing of `row_sum` relies",
             'says what grading does, not what the code must do'),
    NotARule('A `for`, `while` or comprehension at the top level',
             'says which code grading reads for the no-loop rule, not what the code must do'),
    NotARule('`x` may be a transposed matrix',
             'describes the arguments the task is given'),
    NotARule('Its 10 points: the example',
             'says what grading does, not what the code must do'),
    NotARule('If you expand, remember the',
             'a hint: one way to meet the task, not a rule of it'),
    NotARule("Recall `(u w)' = u' w + u",
             'a hint: one way to meet the task, not a rule of it'),
]
