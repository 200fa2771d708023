"""Studio as a Model Context Protocol server: other MCP clients (an IDE, another agent
framework) call a user's published agents and a safe part of Studio's tool catalogue
over streamable HTTP at ``/mcp``, signed in with an MCP token (``Authorization: Bearer
smcp_...``) the user made on the MCP tokens page.

- ``app``: the ASGI endpoint: host check, token authentication (401 without a valid
  token), and the MCP SDK's streamable HTTP transport, stateless (each POST stands
  alone, so any server process of a scaled-out Studio can answer it) with JSON answers.
- ``tools``: what a signed-in user sees and calls. Every lookup is scoped to the
  token's user: another user's agents are not listed and cannot be called.
"""
