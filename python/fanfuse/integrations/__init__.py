"""Integrations: a `MultiQueryRetriever` inside LangChain, LlamaIndex and Haystack, and their
retrievers as fanfuse retrievers, one module per framework (each an optional extra:
`pip install 'fanfuse[langchain]'`, `[llamaindex]`, `[haystack]`). `conversion` is what they share,
with no framework imported. Nothing here is imported by `import fanfuse`.
"""
