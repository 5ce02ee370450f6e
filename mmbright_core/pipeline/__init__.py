"""Pipelines: several commands (rewrite, run, rerank, fuse) run from one file, stage by stage.

:mod:`.plan` reads and checks the file and builds each stage's command line;
:mod:`.stages` runs the stages, reusing those that already ran as the file asks.
"""
