"""The notebook: magics, cell arguments, views, widgets, export."""
