"""The server-rendered pages: views, their forms, and the MCP servers pages."""
