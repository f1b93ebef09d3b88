"""Tasks: the handles of long-running calls (`TaskHandle`), SEP-1686 and SEP-2663 alike."""
