"""The shell's Kubernetes plumbing, apart from any scheduling policy: the raw API client
the writes use, the list+watch that fills the cache, and Kopf's registrations.

Nothing here decides anything; swapping the client or the watch library touches only
this package.
"""
