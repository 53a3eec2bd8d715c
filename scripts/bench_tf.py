"""The same training as `dnn-classifier train` in TensorFlow, for scripts/bench-gpu --device cpu.

TF <= 2.15: the canned `tf.estimator.DNNClassifier` (one numeric feature column of the row's
width, Adam) on the CSV read by tf.data. TF >= 2.16 (no tf.estimator): the same network in
Keras, `model.fit` on the same tf.data pipeline. Either way the rows are parsed once and
cached, then shuffled, repeated, batched and prefetched; examples/s timed after the first
min(100, 10 %) steps, printed as one JSON line like ours, with "framework".

Usage: python bench_tf.py CSV FEATURES HIDDEN BATCH STEPS   (HIDDEN like 128,64)
"""

import json
import os
import sys
import tempfile
import time

started = time.perf_counter()
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

CLASSES = 10


def dataset(path, features, batch, as_dict):
    """The CSV parsed once, a block of lines at a time (vectorised), into one dense feature
    vector per row; cached, shuffled, repeated, batched and prefetched on tf.data's threads —
    TF's advice for a dense input, and the form TF trains fastest from."""
    defaults = [[0.0]] * features + [[0]]

    def parse(lines):
        columns = tf.io.decode_csv(lines, defaults)
        return tf.stack(columns[:-1], axis=1), columns[-1]

    def features_of(x, label):
        return ({"x": x} if as_dict else x), label

    return (
        tf.data.TextLineDataset(path)
        .skip(1)
        .batch(1024)
        .map(parse, num_parallel_calls=tf.data.AUTOTUNE)
        .unbatch()
        .cache()
        .shuffle(10_000, seed=0)
        .repeat()
        .batch(batch, drop_remainder=True)
        .map(features_of)
        .prefetch(tf.data.AUTOTUNE)
    )


class Clock:
    """When step `warmup` ended, and when the last one did."""

    def __init__(self, warmup):
        self.warmup, self.steps, self.warm, self.end = warmup, 0, None, None

    def step_done(self):
        self.steps += 1
        self.end = time.perf_counter()
        if self.steps == self.warmup:
            self.warm = self.end


def estimator_run(path, features, hidden, batch, steps, clock):
    # One numeric column of shape [features]: the same network as one column per feature,
    # without TF concatenating hundreds of them every step.
    columns = [tf.feature_column.numeric_column("x", shape=(features,))]

    class Hook(tf.estimator.SessionRunHook):
        def after_run(self, run_context, run_values):
            clock.step_done()

    with tempfile.TemporaryDirectory() as model_dir:
        est = tf.estimator.DNNClassifier(
            hidden_units=hidden,
            feature_columns=columns,
            n_classes=CLASSES,
            optimizer=lambda: tf.keras.optimizers.legacy.Adam(0.001),
            model_dir=model_dir,
        )
        est.train(lambda: dataset(path, features, batch, True), max_steps=steps, hooks=[Hook()])
    return f"tf.estimator {tf.__version__}"


def keras_run(path, features, hidden, batch, steps, clock):
    import keras

    layers = [keras.Input((features,))]
    layers += [keras.layers.Dense(units, activation="relu") for units in hidden]
    model = keras.Sequential(layers + [keras.layers.Dense(CLASSES)])
    model.compile(
        optimizer=keras.optimizers.Adam(0.001),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )

    class Callback(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            clock.step_done()

    model.fit(
        dataset(path, features, batch, False),
        steps_per_epoch=steps,
        epochs=1,
        shuffle=False,  # the dataset shuffles
        verbose=0,
        callbacks=[Callback()],
    )
    return f"keras {keras.__version__} (TF {tf.__version__})"


def main():
    path, features, hidden, batch, steps = sys.argv[1:6]
    features, batch, steps = int(features), int(batch), int(steps)
    hidden = [int(units) for units in hidden.split(",")]
    clock = Clock(min(100, max(1, steps // 10)))
    run = estimator_run if hasattr(tf, "estimator") else keras_run
    framework = run(path, features, hidden, batch, steps, clock)
    end = clock.end or time.perf_counter()
    warm = clock.warm or end
    steady = (clock.steps - clock.warmup) * batch / (end - warm) if clock.steps > clock.warmup else 0.0
    print(
        json.dumps(
            {
                "examples_per_sec": steady,
                "startup_secs": warm - started,
                "total_examples_per_sec": clock.steps * batch / (end - started),
                "framework": framework,
            }
        )
    )


if __name__ == "__main__":
    main()
