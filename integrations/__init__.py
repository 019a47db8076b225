"""Adapters that let other frameworks use a busca corpus; each needs its extra:
`busca.integrations.langchain` (extra `langchain`: langchain-core only)."""

__all__: list[str] = []
