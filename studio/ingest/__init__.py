"""Traces of agents built elsewhere, sent over OTLP: the wire (``wire``: OTLP/HTTP
bodies in and answers out), what a span says in the GenAI semantic conventions
(``genai``), and the Studio events it becomes (``events``). Storing them is the use
case ``studio.services.ingest``; the endpoint is ``studio.web.otlp``."""
