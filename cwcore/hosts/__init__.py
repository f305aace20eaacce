"""Host integration: the MCP server, hook installers and the lean hook client."""
