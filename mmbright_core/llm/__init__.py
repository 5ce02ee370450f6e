"""Large language models behind an OpenAI-compatible chat endpoint (docs/commands.md).

:mod:`~mmbright_core.llm.chat` sends chat requests (bounded concurrency, retries, a request
and a token budget, progress) and keeps every answer in a content-keyed cache
(:mod:`~mmbright_core.llm.cache`), so a killed job resumes without asking anything twice;
:mod:`~mmbright_core.llm.prompts` holds the query-rewriting prompts and
:mod:`~mmbright_core.llm.rewrite` turns a task's queries into a rewritten query set.
"""
