"""Autograder for the Effective PyTorch course kit.

The engine moves one way: notebook (load) -> sandbox/remote (run in
isolation) -> plugin + checks (judge, with pytest) -> report.
"""
