"""Studio as an Agent2Agent (A2A) client: the ``a2a`` tool entry a spec names to call
remote A2A agents (``client``; the tool itself is ``agents_core.tools.a2a``). Studio
as an A2A server is ``studio.a2a_endpoint``."""
