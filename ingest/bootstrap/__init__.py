"""The existing rows of onboarded tables, copied into their changelogs before they stream.

Entry point: ``bootstrapper.Bootstrapper`` (primary-key chunks inside one consistent snapshot,
``snapshot_reader``); ``background.BackgroundBootstrap`` runs it for tables added to a running
pipeline while the others stream.
"""
