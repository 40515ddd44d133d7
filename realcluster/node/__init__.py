"""The one-node cluster's actions, kind's shape: each module is one small action with an ``up`` and a
``down``, set up in the order ``realcluster.onenode.STEPS`` lists and torn down in reverse.

Everything of the node runs inside a network namespace of its own with no route out
(``netns``); the host reaches kube-apiserver through a loopback port forwarded over a Unix socket
(``forward``). ``layout`` holds the addresses, paths and processes the actions share; ``sweep``
removes what a run leaves on the machine (processes, mounts, cgroups, the namespace), also for a
run that was killed (``state``).
"""
