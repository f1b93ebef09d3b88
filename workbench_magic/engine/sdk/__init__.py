"""The SDK edge: every place the workbench reaches past the MCP SDK's public names.

Each use of a private name of the SDK, each patch of an SDK object and each piece copied from
the SDK lives here, behind a small named function; the rest of the workbench calls those. A
contract test per name (tests/engine/sdk/) fails when the SDK changes what we rely on, and tells
what to re-check.

- session.py: the client and its session (`build_session_hook`, `set_capabilities_builder`,
  `set_request_handler`, `raw_sender`, `output_validator_cache`);
- server.py: `MCPServer` and the server session (`lowlevel_server`, `session_connection`,
  `advertise_tools_changed`);
- auth.py: the OAuth provider's private steps (`before_token_requests`, `after_initialize`,
  `token_request_provider`);
- transports.py: the in-memory transport and the HTTP client's defaults (`in_memory_transport`,
  `http_client`);
- stdio.py: the SDK's stdio client as modified here (`stdio_transport`).

Like the rest of the engine, nothing here imports the SDK until it is called.
"""
