"""The words every layer uses: errors, identifiers, results, events, masking. Imports nothing of ours."""
