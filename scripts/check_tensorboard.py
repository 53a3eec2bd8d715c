#!/usr/bin/env python3
"""Check a model_dir's TensorBoard events with TensorBoard's own reader.

Usage:
    python scripts/check_tensorboard.py MODEL_DIR \
        --train-tags loss,global_step/sec,learning_rate \
        --eval-tags accuracy,average_loss,loss \
        --expect-log LOGFILE --histograms

Loads MODEL_DIR (train) and MODEL_DIR/eval with
`tensorboard.backend.event_processing.event_accumulator.EventAccumulator`, keeping every value,
and asserts that every listed scalar tag is present (and, with --histograms, at least one
histogram tag in the train run). With --expect-log, every `loss = <float>, step = <int>` line of
the log must match the train `loss` scalar at that step, and every `eval metrics: {json}` line
(a JSON object with `global_step` and metric values) must match the eval scalars at that
global_step, each within --rel-tol (default 1e-4, relative). When a step appears several times,
the last log line and the last event win.

Exits 0 printing `tensorboard check: N tags, M values verified`, or 1 with a one-line reason.
Requires `pip install -r scripts/requirements-checks.txt`.
"""

import argparse
import json
import logging
import math
import os
import re
import sys

LOSS_LINE = re.compile(r"(?<![\w/])loss = (\S+?), step = (\d+)\b")
EVAL_MARKER = "eval metrics: "


class CheckFailed(Exception):
    """A check did not pass; the message is the one-line reason."""


def parse_tags(text):
    return [tag.strip() for tag in (text or "").split(",") if tag.strip()]


def load_run(path):
    """An EventAccumulator holding every event of the run directory `path`."""
    from tensorboard.backend.event_processing import event_accumulator as ea

    if not os.path.isdir(path):
        raise CheckFailed(f"run directory {path} does not exist")
    if not any("tfevents" in name for name in os.listdir(path)):
        raise CheckFailed(f"no events files (*tfevents*) in {path}")
    keep_all = {
        ea.COMPRESSED_HISTOGRAMS: 0,
        ea.IMAGES: 0,
        ea.AUDIO: 0,
        ea.SCALARS: 0,
        ea.HISTOGRAMS: 0,
        ea.TENSORS: 0,
    }
    accumulator = ea.EventAccumulator(path, size_guidance=keep_all)
    accumulator.Reload()
    return accumulator


def require_scalar_tags(accumulator, path, tags):
    present = set(accumulator.Tags()["scalars"])
    missing = [tag for tag in tags if tag not in present]
    if missing:
        raise CheckFailed(
            f"{path}: missing scalar tag(s) {', '.join(missing)} "
            f"(has: {', '.join(sorted(present))})"
        )


def scalars_by_step(accumulator, path, tag):
    """{step: value} of the scalar `tag`, the last event winning for a repeated step."""
    if tag not in accumulator.Tags()["scalars"]:
        raise CheckFailed(f"{path}: no scalar tag {tag!r} to compare with the log")
    return {event.step: event.value for event in accumulator.Scalars(tag)}


def close(actual, expected, rel_tol):
    if math.isnan(expected) or math.isnan(actual):
        return math.isnan(expected) and math.isnan(actual)
    return math.isclose(actual, expected, rel_tol=rel_tol)


def parse_log(log_path):
    """({step: loss}, [eval metrics dict]) from the log, the last loss line winning per step."""
    losses, evals = {}, []
    try:
        with open(log_path, encoding="utf-8", errors="replace") as log:
            lines = log.readlines()
    except OSError as error:
        raise CheckFailed(f"cannot read log {log_path}: {error}") from error
    for number, line in enumerate(lines, 1):
        for match in LOSS_LINE.finditer(line):
            try:
                losses[int(match.group(2))] = float(match.group(1))
            except ValueError as error:
                reason = f"{log_path}:{number}: bad loss value {match.group(1)!r}"
                raise CheckFailed(reason) from error
        if EVAL_MARKER in line:
            text = line.split(EVAL_MARKER, 1)[1].strip()
            try:
                metrics, _ = json.JSONDecoder().raw_decode(text)
            except json.JSONDecodeError as error:
                reason = f"{log_path}:{number}: eval metrics are not JSON: {error}"
                raise CheckFailed(reason) from error
            if not isinstance(metrics, dict) or not isinstance(metrics.get("global_step"), int):
                raise CheckFailed(f"{log_path}:{number}: eval metrics lack an integer global_step")
            evals.append((number, metrics))
    return losses, evals


def check(args):
    train_tags = parse_tags(args.train_tags)
    eval_tags = parse_tags(args.eval_tags)
    train_dir = args.model_dir
    eval_dir = os.path.join(args.model_dir, "eval")
    tags_checked = 0
    values_verified = 0

    train = load_run(train_dir)
    require_scalar_tags(train, train_dir, train_tags)
    tags_checked += len(train_tags)
    if args.histograms:
        histograms = train.Tags()["histograms"]
        if not histograms:
            raise CheckFailed(f"{train_dir}: no histogram tags")
        tags_checked += len(histograms)

    evaluation = None
    if eval_tags or os.path.isdir(eval_dir):
        evaluation = load_run(eval_dir)
        require_scalar_tags(evaluation, eval_dir, eval_tags)
        tags_checked += len(eval_tags)

    if args.eval_steps_in_order:
        if evaluation is None:
            raise CheckFailed(f"{eval_dir}: no eval run")
        steps = [event.step for event in evaluation.Scalars("loss")]
        if len(steps) < args.eval_steps_in_order:
            raise CheckFailed(
                f"{eval_dir}: {len(steps)} evaluations, expected at least "
                f"{args.eval_steps_in_order}"
            )
        if any(later <= earlier for earlier, later in zip(steps, steps[1:])):
            raise CheckFailed(f"{eval_dir}: TensorBoard reads the eval steps as {steps}")
        history = os.path.join(eval_dir, "history.jsonl")
        if os.path.exists(history):
            with open(history) as lines:
                evaluated = sorted(json.loads(line)["global_step"] for line in lines)
            if steps != evaluated:
                raise CheckFailed(
                    f"{eval_dir}: TensorBoard shows steps {steps}, the history has {evaluated}"
                )
        values_verified += len(steps)

    if args.expect_log:
        losses, evals = parse_log(args.expect_log)
        if not losses:
            raise CheckFailed(f"{args.expect_log}: no 'loss = <float>, step = <int>' lines")
        logged_loss = scalars_by_step(train, train_dir, "loss")
        for step, expected in sorted(losses.items()):
            if step not in logged_loss:
                raise CheckFailed(f"{train_dir}: no loss scalar at step {step} (log: {expected})")
            if not close(logged_loss[step], expected, args.rel_tol):
                raise CheckFailed(
                    f"{train_dir}: loss at step {step} is {logged_loss[step]!r}, "
                    f"log says {expected!r}"
                )
            values_verified += 1
        if eval_tags and not evals:
            raise CheckFailed(f"{args.expect_log}: no '{EVAL_MARKER}{{json}}' line")
        for number, metrics in evals:
            if evaluation is None:
                raise CheckFailed(
                    f"{args.expect_log}:{number}: eval metrics logged but no {eval_dir}"
                )
            step = metrics["global_step"]
            for tag, expected in sorted(metrics.items()):
                if tag == "global_step" or isinstance(expected, bool):
                    continue
                if not isinstance(expected, (int, float)):
                    continue
                values = scalars_by_step(evaluation, eval_dir, tag)
                if step not in values:
                    raise CheckFailed(f"{eval_dir}: no {tag} scalar at global_step {step}")
                if not close(values[step], float(expected), args.rel_tol):
                    raise CheckFailed(
                        f"{eval_dir}: {tag} at global_step {step} is {values[step]!r}, "
                        f"log line {number} says {expected!r}"
                    )
                values_verified += 1
    return tags_checked, values_verified


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dir", help="the model_dir (train run); eval run in MODEL_DIR/eval")
    parser.add_argument("--train-tags", default="", help="comma-separated train scalar tags")
    parser.add_argument("--eval-tags", default="", help="comma-separated eval scalar tags")
    parser.add_argument("--expect-log", help="training log whose logged values must match")
    parser.add_argument(
        "--histograms", action="store_true", help="require a histogram tag in the train run"
    )
    parser.add_argument("--rel-tol", type=float, default=1e-4, help="relative tolerance")
    parser.add_argument(
        "--eval-steps-in-order",
        type=int,
        default=0,
        metavar="N",
        help="require at least N eval points, read back in increasing step order",
    )
    parser.add_argument(
        "--verbose", action="store_true", help="show TensorBoard's warnings (e.g. purges)"
    )
    args = parser.parse_args(argv)
    if not args.verbose:
        # Keep the output to one line: TensorBoard warns about e.g. purged orphaned events.
        logging.getLogger("tensorboard").setLevel(logging.ERROR)
    try:
        tags, values = check(args)
    except CheckFailed as failure:
        print(f"tensorboard check failed: {failure}", file=sys.stderr)
        return 1
    except Exception as error:  # A reader crash is a failed check, reported on one line too.
        print(f"tensorboard check failed: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    print(f"tensorboard check: {tags} tags, {values} values verified")
    return 0


if __name__ == "__main__":
    sys.exit(main())
