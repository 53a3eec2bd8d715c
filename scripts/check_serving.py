"""Drives estimator-serve as a TF Serving client would: Python's `requests` against the REST
API of a real server process, then SIGTERM, which must end it cleanly.

Usage: check_serving.py ESTIMATOR_SERVE EXPORT_BASE_PATH
"""
import base64
import signal
import socket
import subprocess
import sys
import time

import requests
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory


def example_class():
    """tf.Example's messages (tensorflow/core/example/{example,feature}.proto, the names and
    field numbers that matter here) built with the protobuf library, so that the bytes come
    from protobuf's own encoder."""
    F = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(
        name="check_example.proto", package="tensorflow", syntax="proto3")
    float_list = file.message_type.add(name="FloatList")
    float_list.field.add(name="value", number=1, type=F.TYPE_FLOAT, label=F.LABEL_REPEATED)
    feature = file.message_type.add(name="Feature")
    feature.oneof_decl.add(name="kind")
    feature.field.add(name="float_list", number=2, type=F.TYPE_MESSAGE,
                      type_name=".tensorflow.FloatList", label=F.LABEL_OPTIONAL, oneof_index=0)
    features = file.message_type.add(name="Features")
    entry = features.nested_type.add(name="FeatureEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=F.TYPE_MESSAGE,
                    type_name=".tensorflow.Feature", label=F.LABEL_OPTIONAL)
    features.field.add(name="feature", number=1, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED,
                       type_name=".tensorflow.Features.FeatureEntry")
    example = file.message_type.add(name="Example")
    example.field.add(name="features", number=1, type=F.TYPE_MESSAGE,
                      type_name=".tensorflow.Features", label=F.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("tensorflow.Example"))


Example = example_class()

serve, base = sys.argv[1], sys.argv[2]

with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
url = f"http://127.0.0.1:{port}/v1/models/iris"
server = subprocess.Popen(
    [serve, "--model-name", "iris", "--model-base-path", base, "--port", str(port)],
    stderr=subprocess.PIPE,
    text=True,
)
try:
    deadline = time.monotonic() + 60
    while True:
        try:
            status = requests.get(url, timeout=5)
            break
        except requests.ConnectionError:
            if server.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"estimator-serve did not come up:\n{server.stderr.read()}")
            time.sleep(0.1)
    assert status.status_code == 200, status.text
    (version,) = status.json()["model_version_status"]
    assert version["state"] == "AVAILABLE" and version["status"]["error_code"] == "OK", version

    metadata = requests.get(f"{url}/metadata", timeout=5).json()
    inputs = metadata["metadata"]["signature_def"]["signature_def"]["serving_default"]["inputs"]
    names = ["sepal_length_cm", "sepal_width_cm", "petal_length_cm", "petal_width_cm"]
    assert sorted(inputs) == sorted(names), inputs
    assert all(inputs[n]["dtype"] == "DT_FLOAT" for n in names), inputs

    setosa = dict(zip(names, [5.1, 3.5, 1.4, 0.2]))
    virginica = dict(zip(names, [6.7, 3.0, 5.2, 2.3]))
    rows = requests.post(f"{url}:predict", json={"instances": [setosa, virginica]}, timeout=5)
    assert rows.status_code == 200, rows.text
    predictions = rows.json()["predictions"]
    assert [p["class_ids"] for p in predictions] == [[0], [2]], predictions
    assert all(abs(sum(p["probabilities"]) - 1) < 1e-5 for p in predictions), predictions

    columns = {n: [setosa[n], virginica[n]] for n in names}
    pinned = f"{url}/versions/{version['version']}:predict"
    columnar = requests.post(pinned, json={"inputs": columns}, timeout=5)
    assert columnar.status_code == 200, columnar.text
    assert columnar.json()["outputs"]["class_ids"] == [[0], [2]], columnar.text

    # Serialized tf.Examples, as a client of a TF estimator's parsing serving input sends them.
    def serialized(row):
        example = Example()
        for name, value in row.items():
            example.features.feature[name].float_list.value.append(value)
        return {"b64": base64.b64encode(example.SerializeToString()).decode()}
    parsing = {"signature_name": "predict",
               "instances": [{"examples": serialized(r)} for r in (setosa, virginica)]}
    examples = requests.post(f"{url}:predict", json=parsing, timeout=5)
    assert examples.status_code == 200, examples.text
    assert examples.json() == rows.json(), examples.text

    classified = requests.post(f"{url}:classify", json={"examples": [virginica]}, timeout=5)
    assert classified.status_code == 200, classified.text
    labels = [label for label, _ in classified.json()["result"][0]]
    assert labels == ["0", "1", "2"], classified.text

    missing = requests.post(f"{url}:predict", json={"instances": [{"sepal_length_cm": 1.0}]},
                            timeout=5)
    assert missing.status_code == 400 and "is missing" in missing.json()["error"], missing.text
    unknown = requests.post(
        f"http://127.0.0.1:{port}/v1/models/rose:predict", json={"instances": []}, timeout=5)
    assert unknown.status_code == 404 and "rose" in unknown.json()["error"], unknown.text
    metrics = requests.get(f"http://127.0.0.1:{port}/monitoring/prometheus/metrics", timeout=5)
    assert 'request_count{model_name="iris",status="OK"} 4' in metrics.text, metrics.text
finally:
    server.send_signal(signal.SIGTERM)
    try:
        code = server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()
        sys.exit("estimator-serve did not stop within 10 s of SIGTERM")
assert code == 0, f"estimator-serve exited with {code} after SIGTERM:\n{server.stderr.read()}"
print(f"serving: TF Serving's REST API answered as documented on port {port}; SIGTERM ended it")
