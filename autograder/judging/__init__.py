"""The judging layer: one notebook -> one Grade, with torch, numpy and pytest only.

notebook (load, once; seeds reads the loaded submission) -> student (the student's process, through the
sandbox) -> plugin and the chapter's checks (through authoring: api, expect, timing, static) -> judge -> report.
It never imports course/.
"""
