"""Judging observations: what a box reported, held against what a fact expects.

expectations.py  the expectation operators (one OPERATORS registry)
versions.py      PEP 440 and loose version judgement
outcomes.py      the outcome and status vocabulary (pass, drift, error, skip ...)
sanitize.py      box text made safe for each output format (terminal, Markdown, XML ...)
"""
