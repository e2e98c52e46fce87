"""The rules 09_capstone.ipynb states for its graded tasks, mapped to the checks that keep them
(autograder/judging/rules.py; tests/chapters/test_rules.py holds this list to the notebook).
"""

from autograder.judging.authoring import HOW_GRADED, Evidence, NotARule, Rule

OUTCOME, SOURCE = Evidence.OUTCOME, Evidence.SOURCE

RULES = [
    Rule('pad_collate', '`True` exactly at the real tokens',
         ('check_collate_example', 'check_collate_random'), (OUTCOME, OUTCOME)),
    Rule('SequenceDataset', 'batch `i` of the run must be the same batch in every run',
         ('check_dataset_main_process',), (OUTCOME,)),
    Rule('SequenceDataset', 'each sequence comes out exactly once',
         ('check_dataset_workers',), (OUTCOME,)),
    Rule('SequenceClassifier', 'with exactly these submodules, by these names',
         ('check_classifier_layers',), (OUTCOME,)),
    Rule('SequenceClassifier', 'only the mask says what is real',
         ('check_classifier_logits',), (OUTCOME,)),
    Rule('SequenceClassifier', '`forward` must not loop over the batch',
         ('check_classifier_no_loop',), (SOURCE,)),
    Rule('SequenceClassifier', 'A `for` or `while` loop, a comprehension',
         ('check_classifier_no_loop',), (SOURCE,)),
    Rule('softmax_cross_entropy', 'The code must not name a library softmax',
         ('check_xent_by_hand',), (SOURCE,)),
    Rule('softmax_cross_entropy', 'It must not name `softmax`, `log_softmax`',
         ('check_xent_by_hand',), (SOURCE,)),
    Rule('amp_step', 'a returned loss more than 3 % from',
         ('check_amp_step_updates',), (OUTCOME,)),
    Rule('amp_step', 'not using `torch.autocast`.',
         ('check_amp_step_autocast',), (SOURCE,)),
    Rule('amp_step', 'Use only the current API, `torch.autocast`',
         ('check_amp_step_autocast',), (SOURCE,)),
    Rule('amp_step', 'it must call `torch.autocast` (or',
         ('check_amp_step_autocast',), (SOURCE,)),
    Rule('checkpoint', 'training on after the call must not change it',
         ('check_checkpoint_snapshot_file',), (OUTCOME,)),
    Rule('checkpoint', 'Only tensors, numbers, strings, lists and dicts',
         ('check_checkpoint_snapshot_file',), (OUTCOME,)),
    Rule('checkpoint', 'load the checkpoint into the **fresh** model',
         ('check_checkpoint_restores_run', 'check_checkpoint_scaler'), (OUTCOME, OUTCOME)),
    Rule('checkpoint', "The final weights must equal the grader's uninterrupted run",
         ('check_checkpoint_restores_run', 'check_checkpoint_snapshot_file'), (OUTCOME, OUTCOME)),
    Rule('train', "must classify the grader's own held-out sequences",
         ('check_train_reaches_target',), (OUTCOME,)),
    Rule('train', 'must end with the weights of the uninterrupted run',
         ('check_train_resumes',), (OUTCOME,)),
    Rule('train', '`train(paths, steps=k)` must return the weights',
         ('check_train_step_budget',), (OUTCOME,)),
]

NOT_RULES = [
    *HOW_GRADED,
    NotARule('Sequences of different lengths do not stack',
             'lesson prose: how PyTorch behaves'),
    NotARule('The mask needs no loop', 'a hint: one way to meet the task, not a rule of it'),
    NotARule('(grading uses at least as many shards as workers)', 'says what grading does, not what the code must do'),
    NotARule('`torch.logsumexp`, `amax`, `exp` and `log` are allowed', 'a permission: what the rule allows'),
    NotARule('Clipping is not needed here', 'a hint: one way to meet the task, not a rule of it'),
    NotARule('A run resumed without them goes on', 'lesson prose: how PyTorch behaves'),
]
