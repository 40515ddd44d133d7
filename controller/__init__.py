"""The TFJob controller: watch-fed caches, a work queue and the ``tfjob.planner`` wired to the API.

Modules: ``config`` (flags), ``resources`` (the TFJob resource, job keys), ``caches`` (reflectors
and stores), ``writes`` (read-your-writes), ``actions`` (carrying out planned actions),
``status`` (status writes), ``reconciler`` (one pass), ``metrics``, ``manager`` (workers, leader
election, shutdown) and ``__main__`` (``tfgang-controller``).
"""
