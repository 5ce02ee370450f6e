"""The Run page: a retriever or preset chosen, its ``mmbright run`` command run."""
