"""Running one sandbox component in the foreground until SIGTERM or SIGINT.

The node agent and the scheduler share the same life cycle: configure logging, run a coroutine,
let a signal cancel it so its cleanup still runs (containers stopped, Events flushed), and turn
the ways it can end into exit codes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Coroutine
from typing import Any

from kube.errors import ApiError, ConfigError

logger = logging.getLogger(__name__)

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


async def _until_signalled(work: Coroutine[Any, Any, None]) -> None:
    task = asyncio.ensure_future(work)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, task.cancel)
    with contextlib.suppress(asyncio.CancelledError):
        await task
    logger.info("stopped")


def run_in_foreground(work: Coroutine[Any, Any, None], *, component: str, log_level: str) -> int:
    """0 after a signal or a normal end, 2 for unusable configuration, 1 when the API gave up."""
    logging.basicConfig(level=log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        asyncio.run(_until_signalled(work))
    except KeyboardInterrupt:
        return 0
    except ConfigError as error:
        logger.error("%s", error)
        return 2
    except (ApiError, ExceptionGroup) as error:
        logger.error("%s stopped: %s", component, error)
        return 1
    return 0
