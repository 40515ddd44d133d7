"""``kubectl tfjob``: a kubectl plugin that explains a TFJob offline and shows why a live one waits.

It reads jobs with the pure domain (``tfjob``) and talks to the cluster with ``kube``, so what it
prints is what the webhook and controller do; nothing in the operator imports it.
"""
