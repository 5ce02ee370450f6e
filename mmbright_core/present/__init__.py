"""Presentation of the analysis: Plotly figures, the HTML report and its tables, the colours.

Shared by the dashboard (``ui/``) and the command line (``cli/``). Modules here lay out the
tables ``analysis/`` computes and never compute a statistic themselves; ``analysis/``
imports nothing from here.
"""
