"""The client engine: the loop thread, the core registry, connections, transports, the client side of MCP,
schema checks, subscriptions, server logs, in-process servers, record and replay."""
