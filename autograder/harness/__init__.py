"""Per-chapter harness code, sent to the student's process as source text.

A file `chNN_name.py` here is executed in the child before the answer cells,
in its own namespace, with the student's namespace bound to `student`.
Checks call its functions through the chapter's API, where each is declared
with @harness (autograder/api.py). It runs beside untrusted code, so the
judge verifies whatever it returns. Never put hidden inputs or solutions
here: the child can read it.
"""
