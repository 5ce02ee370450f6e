"""MM-BRIGHT specifics: the published layout, id conventions, sources and task protocols.

Open a copy of the dataset with :func:`mmbright_core.data.sources.open_source` and ask it for a
task: ``open_source("demo").task(3, "biology")``.
"""
