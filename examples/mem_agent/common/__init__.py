"""Plumbing every room may use, and nothing else: whole-file writes that never leave a half file
(atomic_files), the command name users typed (console), JSON arrays streamed item by item
(jsonstream), one writer per run folder (run_folder) and the one exception for a user's mistake
(usage). Imports no other room.
"""
