"""The vocabulary of Kubernetes objects, pure: metadata and owner views over raw dicts, quantities,
names and labels, selectors, timestamps and durations.

Every room may import it; it imports nothing but the standard library, does no I/O and reads no
clock. It knows Kubernetes' rules, never a TFJob's.
"""
