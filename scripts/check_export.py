"""Checks an export directory the way a Python user reads it.

Usage: python scripts/check_export.py EXPORT_DIR_BASE

Takes the newest `<unix-timestamp>/` directory under EXPORT_DIR_BASE, loads
`model.safetensors` with the `safetensors` package (numpy), and checks that every tensor is
finite and that `signature.json`, `estimator.json` and `export.json` parse and agree.
Exit 0 with one summary line, or 1 with one line saying what is wrong.
"""

import json
import os
import sys


def fail(message):
    print(f"export check failed: {message}")
    sys.exit(1)


def main():
    if len(sys.argv) != 2:
        fail("usage: check_export.py EXPORT_DIR_BASE")
    base = sys.argv[1]
    try:
        stamps = sorted((d for d in os.listdir(base) if d.isdigit()), key=int)
    except OSError as e:
        fail(f"{base}: {e}")
    if not stamps:
        fail(f"{base}: no <timestamp>/ export directory")
    export_dir = os.path.join(base, stamps[-1])

    import numpy as np
    from safetensors.numpy import load_file

    try:
        tensors = load_file(os.path.join(export_dir, "model.safetensors"))
    except Exception as e:  # noqa: BLE001 - any load failure is the finding
        fail(f"{export_dir}/model.safetensors: {e}")
    if not tensors:
        fail(f"{export_dir}/model.safetensors holds no tensor")
    for name, value in tensors.items():
        if value.dtype != np.float32 or not np.all(np.isfinite(value)):
            fail(f"{export_dir}/model.safetensors: tensor {name} is not finite float32")

    docs = {}
    for name in ("signature.json", "estimator.json", "export.json"):
        try:
            with open(os.path.join(export_dir, name)) as f:
                docs[name] = json.load(f)
        except (OSError, ValueError) as e:
            fail(f"{export_dir}/{name}: {e}")
    if not docs["signature.json"].get("outputs"):
        fail(f"{export_dir}/signature.json has no outputs")
    step = docs["export.json"].get("global_step")
    params = sum(v.size for v in tensors.values())
    print(
        f"export check: {export_dir}: {len(tensors)} tensors, {params} parameters, "
        f"global_step {step}"
    )


if __name__ == "__main__":
    main()
