"""Streamlit-side glue of the dashboard: session state, cached loaders, sidebar, rendering.

Pages stay thin: they read widgets, call the core through these helpers and render. Nothing
here computes a metric or orders a run; that is the core's job.
"""
