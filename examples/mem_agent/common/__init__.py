"""Plumbing every room may use, and nothing else: every file written, appended or read from a run
folder, never through a link, a hard link or a FIFO, whole files never half written (guarded_files),
the command name users typed (console), JSON arrays streamed item by item
(jsonstream), one writer per run folder (run_folder) and the one exception for a user's mistake
with its collector, every problem at once (usage). Imports no other room.
"""
