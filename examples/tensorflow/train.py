"""A small, real distributed Keras training program for a TFJob.

It classifies scikit-learn's handwritten digits (8x8 images that ship inside the package: nothing
is downloaded) with a small dense network, under one of two strategies:

* ``--strategy collective``: ``MultiWorkerMirroredStrategy``. Every replica is a Worker and runs
  ``model.fit``; worker 0 is the chief, as TensorFlow takes it when the cluster has no ``chief``.
* ``--strategy parameter-server``: ``ParameterServerStrategy``. PS and Worker replicas only serve
  (``tf.distribute.Server(...).join()``, they never exit by themselves); the Chief is the
  coordinator that runs ``model.fit``, and the job's success is the chief's.

The cluster comes from ``TF_CONFIG`` (tfgang's webhook writes it into every pod), read by
TensorFlow's own ``TFConfigClusterResolver``. Checkpoints go through Keras' ``BackupAndRestore``
to ``--checkpoint-dir``, a directory every replica of the job shares: after a whole-gang restart
the program starts again from the start, finds the last finished epoch there and trains only the
epochs that remain.

Keras: this program uses ``tf-keras`` (Keras 2, ``TF_USE_LEGACY_KERAS=1``), not the Keras 3 that
TensorFlow installs by default: Keras 3.15's ``model.fit`` fails under
``MultiWorkerMirroredStrategy`` ("Attempt to convert a value (PerReplica...) with an unsupported
type"). See README.md.

Progress goes to stdout as ``[train] event=... key=value ...`` lines (``progress.py``).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time

# Before TensorFlow is imported: tf.keras is then tf-keras (Keras 2), and TensorFlow's C++ log
# keeps to warnings unless the user asks for more.
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

import numpy as np
import tensorflow as tf
import tf_keras as keras
from progress import format_line
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

COLLECTIVE = "collective"
PARAMETER_SERVER = "parameter-server"


def report(event: str, **fields: object) -> None:
    print(format_line(event, **fields), flush=True)


def arguments(argv: list[str]) -> argparse.Namespace:
    env = os.environ.get
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--strategy", choices=[COLLECTIVE, PARAMETER_SERVER], default=env("STRATEGY", COLLECTIVE)
    )
    parser.add_argument("--epochs", type=int, default=int(env("EPOCHS", "10")))
    parser.add_argument("--steps-per-epoch", type=int, default=int(env("STEPS_PER_EPOCH", "20")))
    parser.add_argument(
        "--step-delay",
        type=float,
        default=float(env("STEP_DELAY", "0")),
        help="seconds of sleep after each step, so that a test can interrupt an epoch (collective only)",
    )
    parser.add_argument("--batch-size", type=int, default=int(env("BATCH_SIZE", "32")), help="per replica")
    parser.add_argument(
        "--checkpoint-dir",
        default=env("CHECKPOINT_DIR", "/checkpoints"),
        help="BackupAndRestore's directory: shared by every replica of the job, one per job",
    )
    parser.add_argument("--seed", type=int, default=int(env("SEED", "0")))
    args = parser.parse_args(argv)
    if args.strategy == PARAMETER_SERVER and args.step_delay > 0:
        parser.error("--step-delay needs --strategy collective: Keras has no per-step callbacks under PS")
    return args


def digits() -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """scikit-learn's digits, scaled to [0, 1]: 1,437 images to train on, 360 held out."""
    images, labels = load_digits(return_X_y=True)
    images = (images / 16.0).astype("float32")
    labels = labels.astype("int64")
    x_train, x_test, y_train, y_test = train_test_split(
        images, labels, test_size=0.2, random_state=0, stratify=labels
    )
    return (x_train, y_train), (x_test, y_test)


def build_model() -> keras.Model:
    model = keras.Sequential(
        [
            keras.layers.Input(shape=(64,)),
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(10),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate=0.01),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


class Progress(keras.callbacks.Callback):
    """Reports each epoch, and whether this run resumed from a checkpoint.

    ``BackupAndRestore`` restores in ``on_train_begin`` and fit then starts from the epoch after
    the last one saved, so the first epoch this run begins tells which epoch it resumed from.
    Epoch-level hooks only: Keras refuses batch-level callbacks under ParameterServerStrategy."""

    def __init__(self, epochs: int) -> None:
        super().__init__()
        self.epochs = epochs
        self.first_epoch: int | None = None
        self.epoch_started = 0.0

    def on_epoch_begin(self, epoch: int, logs: dict[str, float] | None = None) -> None:
        if self.first_epoch is None:
            self.first_epoch = epoch + 1
            report("start", first_epoch=self.first_epoch, epochs=self.epochs, resumed=self.resumed)
        self.epoch_started = time.monotonic()

    def on_epoch_end(self, epoch: int, logs: dict[str, float] | None = None) -> None:
        logs = logs or {}
        report(
            "epoch",
            epoch=epoch + 1,
            epochs=self.epochs,
            loss=float(logs.get("loss", float("nan"))),
            accuracy=float(logs.get("accuracy", float("nan"))),
            resumed=self.resumed,
            first_epoch=self.first_epoch or epoch + 1,
            seconds=time.monotonic() - self.epoch_started,
        )

    @property
    def resumed(self) -> bool:
        return (self.first_epoch or 1) > 1


class Steps(keras.callbacks.Callback):
    """Reports the first training step and sleeps ``delay`` seconds after each step (collective
    only), so that a test or a demo has time to interrupt an epoch."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay
        self.stepped = False

    def on_train_batch_end(self, batch: int, logs: dict[str, float] | None = None) -> None:
        if not self.stepped:
            self.stepped = True
            report("first_step")
        if self.delay > 0:
            time.sleep(self.delay)


def test_accuracy(model: keras.Model, x_test: np.ndarray, y_test: np.ndarray) -> float:
    # The model called directly: under either strategy this reads the trained variables (the local
    # mirror, or the parameter servers) without another distributed evaluation loop.
    logits = model(tf.constant(x_test), training=False)
    predicted = np.argmax(np.asarray(logits), axis=1)
    return float(np.mean(predicted == y_test))


def fit(
    strategy: tf.distribute.Strategy,
    dataset: object,
    args: argparse.Namespace,
    test: tuple[np.ndarray, np.ndarray],
    extra_callbacks: list[keras.callbacks.Callback],
) -> None:
    with strategy.scope():
        model = build_model()
    progress = Progress(args.epochs)
    started = time.monotonic()
    model.fit(
        dataset,
        epochs=args.epochs,
        steps_per_epoch=args.steps_per_epoch,
        # BackupAndRestore first: it restores before Progress sees the first epoch begin.
        callbacks=[
            keras.callbacks.BackupAndRestore(backup_dir=args.checkpoint_dir),
            progress,
            *extra_callbacks,
        ],
        verbose=0,
    )
    ran = args.epochs - (progress.first_epoch or args.epochs + 1) + 1
    report(
        "done",
        test_accuracy=test_accuracy(model, *test),
        epochs_run=ran,
        resumed=progress.resumed,
        seconds=time.monotonic() - started,
    )


def run_collective(
    resolver: tf.distribute.cluster_resolver.TFConfigClusterResolver, args: argparse.Namespace
) -> None:
    strategy = tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=resolver)
    claim_sigterm()  # back from TensorFlow's preemption notifier
    workers = strategy.num_replicas_in_sync
    (x_train, y_train), (x_test, y_test) = digits()
    options = tf.data.Options()
    # In-memory data has no files to shard: every worker takes its own share of the elements.
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    dataset = (
        tf.data.Dataset.from_tensor_slices((x_train, y_train))
        .shuffle(len(x_train), seed=args.seed)
        .repeat()
        .batch(args.batch_size * workers)  # the global batch; Keras splits it between the replicas
        .with_options(options)
    )
    fit(strategy, dataset, args, (x_test, y_test), [Steps(args.step_delay)])


def run_parameter_server(
    resolver: tf.distribute.cluster_resolver.TFConfigClusterResolver, args: argparse.Namespace
) -> None:
    if resolver.task_type in ("worker", "ps"):
        server = tf.distribute.Server(
            resolver.cluster_spec(),
            job_name=resolver.task_type,
            task_index=resolver.task_id,
            protocol=resolver.rpc_layer or "grpc",
            start=True,
        )
        report("serving", task_type=resolver.task_type, task_index=resolver.task_id)
        server.join()  # until the pod is deleted: the job is done when the chief is
        return
    strategy = tf.distribute.ParameterServerStrategy(resolver)
    claim_sigterm()
    (x_train, y_train), (x_test, y_test) = digits()

    def dataset_fn(context: tf.distribute.InputContext) -> tf.data.Dataset:
        return (
            tf.data.Dataset.from_tensor_slices((x_train, y_train))
            .shard(context.num_input_pipelines, context.input_pipeline_id)
            .shuffle(len(x_train), seed=args.seed)
            .repeat()
            .batch(args.batch_size)  # each worker runs whole steps of its own
            .prefetch(2)
        )

    fit(strategy, keras.utils.experimental.DatasetCreator(dataset_fn), args, (x_test, y_test), [])


def exit_on_sigterm() -> None:
    """End at once on SIGTERM, which Kubernetes sends to a pod's containers when it is deleted.

    Two things stand in the way. The program is its container's PID 1, and the kernel delivers no
    signal to a PID 1 that has no handler for it. And MultiWorkerMirroredStrategy installs
    TensorFlow's own SIGTERM handler (its preemption notifier), which only takes note: the
    process trains on. Either way every deletion (a gang restart deletes every pod) would wait out
    the 30 s grace period for SIGKILL, and the old gang would go on training meanwhile. So the
    program handles SIGTERM itself, again after the strategy is made (``claim_sigterm``). The
    handler cannot wait for the main thread, which may sit in TensorFlow's C++ for long
    (``server.join()`` forever): the signal's wakeup byte goes to a thread of its own, which
    exits. The last checkpoint saved is all a restart needs."""
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    signal.set_wakeup_fd(write_end)
    claim_sigterm()

    def watch() -> None:
        while signal.SIGTERM not in os.read(read_end, 64):
            pass
        report("stopped", signal="SIGTERM")
        os._exit(128 + signal.SIGTERM)

    threading.Thread(target=watch, name="sigterm", daemon=True).start()


def claim_sigterm() -> None:
    """SIGTERM to this program's handler (the wakeup byte does the work), whoever took it since."""
    signal.signal(signal.SIGTERM, lambda signum, frame: None)


def main(argv: list[str]) -> int:
    args = arguments(argv)
    exit_on_sigterm()
    keras.utils.set_random_seed(args.seed)
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    # What TensorFlow itself read from TF_CONFIG: this task and every address of the cluster.
    report(
        "cluster",
        strategy=args.strategy,
        task_type=resolver.task_type or "none",
        task_index=resolver.task_id if resolver.task_id is not None else "none",
        cluster=resolver.cluster_spec().as_dict(),
    )
    if args.strategy == COLLECTIVE:
        run_collective(resolver, args)
    else:
        run_parameter_server(resolver, args)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
