"""Comparisons of runs: per-query tables, paired statistics, image effect, leaderboards, reports.

Pure functions shared by the command line and the dashboard; nothing here reads files
except the packaged reference scores.
"""
