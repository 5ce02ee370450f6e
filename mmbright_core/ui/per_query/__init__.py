"""The Per query page: each query's score in a run, and in a pair of runs."""
