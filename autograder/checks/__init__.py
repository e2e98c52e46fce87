"""One module per chapter, ch<id>.py: its declared API and the hidden checks that only grading runs.

A larger chapter keeps its input generation and its oracles apart, in ch<NN>_inputs.py and ch<NN>_oracles.py.
"""
