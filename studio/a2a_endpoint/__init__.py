"""Studio's published agents as A2A servers under ``/a2a/<agent id>/``, with the
``a2a-sdk`` package; each task a Studio run of the agent's owner.

- ``app``: the ASGI endpoint under ``/a2a/``: host check, MCP-token authentication (401
  without a valid token), the agent lookup (404 for one not the token user's or not
  published), then the SDK's JSON-RPC route and Studio's agent card route.
- ``cards``: an agent's card: its skills (the agent, and the tools of its spec) and the
  bearer security scheme.
- ``handler``: the SDK's ``RequestHandler`` over Studio's runs; ``tasks``: a run as an
  A2A task (its state from the run's status).
"""
