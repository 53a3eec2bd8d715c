"""Runs the serving Deployment of examples/k8s/serving-dnn-classifier.yaml as its pod would,
without a cluster: the ConfigMap's files written to a folder, the container's command (TF
Serving's flags) run with them and a real export, then the pod's probes, the scrape path
and the Service's ports checked against the server, and SIGTERM within the grace period.

Usage: check_k8s_serving.py ESTIMATOR_SERVE EXPORT_BASE_PATH
"""
import pathlib
import signal
import socket
import subprocess
import sys
import tempfile
import time

import requests
import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "examples/k8s/serving-dnn-classifier.yaml"

serve, base = sys.argv[1], sys.argv[2]
docs = {d["kind"]: d for d in yaml.safe_load_all(MANIFEST.read_text())}
config, deployment, service = docs["ConfigMap"], docs["Deployment"], docs["Service"]
pod = deployment["spec"]["template"]
(container,) = pod["spec"]["containers"]
ports = {p["name"]: p["containerPort"] for p in container["ports"]}
mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
volumes = {v["name"]: v for v in pod["spec"]["volumes"]}


def free_ports(n):
    """`n` distinct free ports: every socket stays bound until all are chosen, since a port
    released at once may be handed out again by the next bind."""
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def fail(message):
    sys.exit(f"{MANIFEST.relative_to(ROOT)}: {message}")


# The Service sends each port to a named container port, and the selector picks the pods.
for port in service["spec"]["ports"]:
    if port["targetPort"] not in ports:
        fail(f"Service port {port['name']} targets {port['targetPort']!r}, not a container port")
if service["spec"]["selector"].items() - pod["metadata"]["labels"].items():
    fail("the Service's selector picks none of the Deployment's pods")
config_volume = next(n for n, v in volumes.items() if "configMap" in v)
if volumes[config_volume]["configMap"]["name"] != config["metadata"]["name"]:
    fail("the config volume does not mount the ConfigMap")

with tempfile.TemporaryDirectory() as folder:
    folder = pathlib.Path(folder)
    mount = mounts[config_volume]
    model_mount = mounts[next(n for n, v in volumes.items() if "persistentVolumeClaim" in v)]
    for name, text in config["data"].items():
        # The model volume holds the TFJob's model directory; here, the export given.
        text = text.replace(f"{model_mount}/iris/export", base)
        (folder / name).write_text(text)
    rest, grpc = free_ports(2)
    args = []
    for arg in container["command"][1:]:
        arg = arg.replace(f"{mount}/", f"{folder}/")
        arg = arg.replace(f"={ports['rest']}", f"={rest}").replace(f"={ports['grpc']}", f"={grpc}")
        args.append("--host=127.0.0.1" if arg.startswith("--host=") else arg)
    server = subprocess.Popen([serve, *args], stderr=subprocess.PIPE, text=True)
    try:
        probe = container["readinessProbe"]["httpGet"]
        url = f"http://127.0.0.1:{rest}{probe['path']}"
        deadline = time.monotonic() + 60
        while True:
            try:
                ready = requests.get(url, timeout=5)
                break
            except requests.ConnectionError:
                if server.poll() is not None or time.monotonic() > deadline:
                    fail(f"the container's command did not serve:\n{server.stderr.read()}")
                time.sleep(0.1)
        if ready.status_code != 200:
            fail(f"the readiness probe {probe['path']} answered {ready.status_code}: {ready.text}")
        scrape = pod["metadata"]["annotations"]["prometheus.io/path"]
        metrics = requests.get(f"http://127.0.0.1:{rest}{scrape}", timeout=5)
        if metrics.status_code != 200:
            fail(f"the scrape path {scrape} answered {metrics.status_code}")
        socket.create_connection(("127.0.0.1", grpc), timeout=5).close()
    finally:
        server.send_signal(signal.SIGTERM)
        grace = pod["spec"]["terminationGracePeriodSeconds"]
        try:
            code = server.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            server.kill()
            fail(f"the server did not stop within the {grace} s grace period of SIGTERM")
    if code != 0:
        fail(f"the server exited with {code} after SIGTERM:\n{server.stderr.read()}")
print(f"k8s serving: {MANIFEST.name}'s command served the export (ready, scraped, gRPC port "
      "open); SIGTERM ended it")
