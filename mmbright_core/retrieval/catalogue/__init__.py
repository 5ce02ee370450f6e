"""The presets of the paper's models and the numbers published for them.

``catalogue.json`` holds one record per model the official harness runs, read and checked by
``presets.py``; ``preset_run.py`` turns a preset into its backend's options; ``pinning.py``
says which revision a run loads and warns of a hub model none pins; ``doc.py``
writes ``docs/models.md``; ``reference.json`` with ``reference.py`` keeps each published
number once, read by the catalogue's check and by the leaderboard.
"""
