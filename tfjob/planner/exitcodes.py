"""The ExitCode restart policy's exit-code table (D9, upstream v1.9).

The exit code of a Failed pod is the ``state.terminated.exitCode`` of its ``tensorflow``
container. Then:

=================  ============  ==================================================
exit code          verdict       typical cause
=================  ============  ==================================================
0                  permanent     (a Failed pod that exited 0 is not retried)
1 - 127            permanent     the program failed: a bug, bad input, exit(1)
128 - 255          retryable     killed by a signal: 130 SIGINT, 137 SIGKILL/OOM,
                                 139 SIGSEGV, 143 SIGTERM (preemption, eviction)
no exit code       retryable     the container never terminated (evicted before it
                                 started, node lost): upstream's sentinel 0xbeef
=================  ============  ==================================================

A retryable failure deletes the pod and recreates it (counted towards backoffLimit, D2); a
permanent one fails the job at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tfjob.constants import CONTAINER_NAME, EXIT_CODE_UNKNOWN

FIRST_RETRYABLE_EXIT_CODE = 128


def is_retryable_exit_code(code: int) -> bool:
    return code >= FIRST_RETRYABLE_EXIT_CODE


def tensorflow_exit_code(pod: Mapping[str, Any]) -> int | None:
    """The exit code of the pod's terminated ``tensorflow`` container, None if it has none."""
    status = pod.get("status")
    if not isinstance(status, dict):
        return None
    for container in status.get("containerStatuses") or ():
        if not isinstance(container, dict) or container.get("name") != CONTAINER_NAME:
            continue
        state = container.get("state")
        terminated = state.get("terminated") if isinstance(state, dict) else None
        if isinstance(terminated, dict):
            code = terminated.get("exitCode")
            if isinstance(code, int) and not isinstance(code, bool):
                return code
        return None
    return None


def effective_exit_code(pod: Mapping[str, Any]) -> int:
    """The exit code the ExitCode policy judges: the real one, or the sentinel when unknown."""
    code = tensorflow_exit_code(pod)
    return EXIT_CODE_UNKNOWN if code is None else code
