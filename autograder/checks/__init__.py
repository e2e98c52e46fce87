"""One module per chapter: the hidden checks that only grading runs."""
