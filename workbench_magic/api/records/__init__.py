"""Records and traces: what a session did (history, `wb.record`), OpenTelemetry spans, and the
regression tests and snapshots made from it.
"""
