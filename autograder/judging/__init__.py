"""The judging layer: one notebook -> one Grade, with torch, numpy and pytest only.

notebook (load, once; seeds reads the loaded submission) -> remote (the student's process, through the
sandbox) -> plugin and the chapter's checks (api, expect, timing, scan) -> judge -> report. It never imports
course/.
"""
