"""Comparisons of runs: per-query tables, paired statistics, slices, image effect, leaderboards.

Pure functions shared by the command line and the dashboard; nothing here reads files
except the packaged reference scores.
"""
