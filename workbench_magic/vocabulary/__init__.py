"""The words every layer uses: errors, identifiers, results, listings, events, masking. Imports nothing of ours."""
