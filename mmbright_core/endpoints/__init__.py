"""The HTTP client of OpenAI-compatible endpoints, shared by every stage that calls one.

The api retriever's embeddings, the chat client of rewriting and the LLM rerankers all send
through :class:`~mmbright_core.endpoints.client.EndpointClient` (:mod:`.client`: the key,
bounded retries, the request budget), every answer bounded in size and in time
(:mod:`.bounded_http`) and every failure worded as one line (:mod:`.failures`). It sits
below ``retrieval`` and the second stages and imports neither.
"""
