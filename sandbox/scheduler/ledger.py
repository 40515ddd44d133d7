"""Per-session resource accounting: what each node has in use, including this session's choices."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sandbox.scheduler.placement import Placement, fit_error_message, fit_failures
from sandbox.scheduler.resources import add, subtract
from sandbox.scheduler.snapshot import NodeInfo, TaskInfo

ScoreFn = Callable[[TaskInfo, NodeInfo, dict[str, int]], float]


class Ledger:
    """Mutable within one session only; ``fork`` gives a scratch copy for tentative gang placement."""

    def __init__(self, nodes: Sequence[NodeInfo], used: dict[str, dict[str, int]] | None = None) -> None:
        self.nodes = tuple(nodes)
        self.used: dict[str, dict[str, int]] = (
            used if used is not None else {node.name: dict(node.used) for node in nodes}
        )

    def fork(self, only: frozenset[str] | None = None) -> Ledger:
        """A scratch copy; ``only``: placing on those nodes alone (a HyperNode)."""
        nodes = self.nodes if only is None else tuple(node for node in self.nodes if node.name in only)
        return Ledger(nodes, {name: dict(amounts) for name, amounts in self.used.items()})

    def commit(self, task: TaskInfo, node: str) -> None:
        self.used[node] = add(self.used.get(node, {}), task.demand)

    def release(self, task: TaskInfo) -> None:
        """``task`` leaves its node (a trial of what evicting it would free)."""
        if task.node_name:
            self.used[task.node_name] = subtract(self.used.get(task.node_name, {}), task.demand)

    def place(self, task: TaskInfo, score: ScoreFn, *, volcano: bool) -> Placement | str:
        """The best node for ``task``, or the fit-error message when no node fits."""
        best: Placement | None = None
        reasons: list[str] = []
        for node in self.nodes:
            used = self.used.get(node.name, {})
            failures = fit_failures(task, node, used)
            if failures:
                reasons.extend(failures)
                continue
            candidate = Placement(node.name, score(task, node, used))
            if best is None or candidate.score > best.score:
                best = candidate
        if best is not None:
            return best
        if not self.nodes:
            return (
                "0/0 nodes are available: no nodes registered."
                if not volcano
                else ("0/0 nodes are unavailable: no nodes registered.")
            )
        return fit_error_message(len(self.nodes), reasons, volcano=volcano)
