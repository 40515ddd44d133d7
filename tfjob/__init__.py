"""The TFJob domain, pure: wire shapes, defaults, validation, naming, TF_CONFIG, desired objects
and the reconcile planner. Nothing here does I/O or reads the clock; time is a parameter.
"""
