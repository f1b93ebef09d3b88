"""Toolboxes: opening and closing them (`Toolboxes`), and the handles `wb.open` returns (`OpenedToolbox`)."""
