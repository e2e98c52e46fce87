"""The judge's reading of student code, with `ast` (nothing is run): parse.py reads the cells and resolves names,
review.py flags what reaches into other code for the instructor, rules.py is the code a task reaches and the
rules only the source can show."""
