"""The one exception a command raises for a user's mistake in how it was called."""


class UsageError(Exception):
    """A mistake in how a command was called; reported in one line with exit status 2."""
