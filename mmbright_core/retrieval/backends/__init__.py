"""The model backends, one module each beside its factory, and what they share.

Each backend's record (its factory, rebuild recipe, preset recipe, Run page fields, extras and
tasks) is in :mod:`~mmbright_core.retrieval.backend_table`, beside the registry that reads it.
"""
