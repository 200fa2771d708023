"""Studio and the Agent2Agent (A2A) protocol, with the ``a2a-sdk`` package.

- ``server``: a user's published agents as A2A servers under ``/a2a/<agent id>/``
  (agent card, JSON-RPC send, stream, get, cancel), each task a Studio run of theirs.
- ``client``: the ``a2a`` tool a Studio agent calls a remote A2A agent with, through
  Studio's outbound address checks (the tool itself is ``agents_core.tools.a2a``).
"""
