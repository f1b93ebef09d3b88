"""MCP Apps: the views a tool's UI resource opens in (`AppView`), their bridge and their host context
(protocol logic, no widget).
"""
