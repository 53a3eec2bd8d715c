#!/usr/bin/env python3
"""Validates the Kubeflow job manifests in examples/k8s/ without a cluster.

Every TFJob, PyTorchJob and MPIJob document is checked against the schema of its version in
the vendored CRDs (examples/k8s/crd/*.yaml) with `jsonschema`, then against the rules the
schema cannot express but the operators' admission checks, the Kubernetes pod validation or
the job's launcher enforce (replica types and counts, the container the operator configures,
restart policies, volumes and claims, GPU limits; mpirun's process count and rendezvous).

    check_k8s_manifests.py [FILE ...]           # default: examples/k8s/*.yaml
    check_k8s_manifests.py --expect-invalid DIR # every DIR/*.yaml must be rejected

Prints one line per file; on the first fault in a file, one line naming the file, the line,
the document and the JSON path, and exits 1. A fixture under --expect-invalid names the
fault it must be rejected for in a `# expect-error: <text>` comment, so that it cannot pass
by failing for another reason.
"""
import argparse
import pathlib
import re
import sys

import jsonschema
import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_CRDS = ROOT / "examples/k8s/crd"
DEFAULT_DIR = ROOT / "examples/k8s"

# From the operator's API (pkg/apis/kubeflow.org/v1): the CRD leaves these as free strings,
# and an unknown replica type or policy is silently ignored by the controller.
REPLICA_TYPES = ("Chief", "Master", "Worker", "PS", "Evaluator")
PYTORCH_REPLICA_TYPES = ("Master", "Worker")
RESTART_POLICIES = ("Always", "OnFailure", "Never", "ExitCode")
CLEAN_POD_POLICIES = ("All", "Running", "None")
SUCCESS_POLICIES = ("", "AllWorkers")
MANAGED_BY = ("kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue")
# The training operator sets TF_CONFIG only in the container named `tensorflow`, and reads
# the PyTorchJob's MASTER_PORT from the container named `pytorch`.
CONTAINER = "tensorflow"
PYTORCH_CONTAINER = "pytorch"
# The MPI operator's validation (pkg/apis/kubeflow/validation, v0.6.0).
MPI_REPLICA_TYPES = ("Launcher", "Worker")
MPI_RESTART_POLICIES = ("Never", "OnFailure")
MPI_IMPLEMENTATIONS = ("OpenMPI", "Intel", "MPICH")
MPI_MANAGED_BY = ("kubeflow.org/mpi-operator", "kueue.x-k8s.io/multikueue")
DNS1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
INT_BOUNDS = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


class Fault(Exception):
    def __init__(self, path, message):
        super().__init__(message)
        self.path = list(path)
        self.message = message


class Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """YAML as the API server reads it: a date-like scalar stays a string."""


Loader.add_constructor("tag:yaml.org,2002:timestamp", Loader.construct_yaml_str)


def json_path(parts):
    out = "$"
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", part):
            out += f".{part}"
        else:
            out += f"[{part!r}]"
    return out


def line_of(node, parts):
    """The line of the deepest node of the path that exists (aliases share their anchor's)."""
    line = node.start_mark.line + 1
    for part in parts:
        child = None
        if isinstance(node, yaml.MappingNode):
            child = next((v for k, v in node.value if k.value == part), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            child = node.value[part] if part < len(node.value) else None
        if child is None:
            break
        node, line = child, child.start_mark.line + 1
    return line


# --- The CRD's structural schema as JSON Schema ------------------------------------------


def to_json_schema(schema, path="$"):
    """Translates the Kubernetes extensions of a CRD schema into plain JSON Schema (draft 4,
    which OpenAPI 3.0 schemas follow)."""
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key == "properties":
            out[key] = {k: to_json_schema(v, f"{path}.{k}") for k, v in value.items()}
        elif key in ("items", "additionalProperties", "not") and isinstance(value, dict):
            out[key] = to_json_schema(value, f"{path}[*]" if key == "items" else path)
        elif key in ("allOf", "anyOf", "oneOf"):
            out[key] = [to_json_schema(v, path) for v in value]
        elif key == "x-kubernetes-validations":
            # CEL rules are not evaluated here; a transition rule (oldSelf) only applies to
            # updates, so only a rule that judges a new object would be missed.
            for rule in value:
                if "oldSelf" not in rule["rule"]:
                    raise SystemExit(f"check_k8s_manifests: {path}: CEL rule {rule['rule']!r} "
                                     "applies on create but is not evaluated by this check")
        elif key.startswith("x-kubernetes-"):
            continue
        else:
            out[key] = value

    if schema.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
    if schema.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    if schema.get("type") == "integer" and schema.get("format") in INT_BOUNDS:
        low, high = INT_BOUNDS[schema["format"]]
        out.setdefault("minimum", low)
        out.setdefault("maximum", high)
    # kubectl's default (strict) field validation rejects a field the schema does not know,
    # unless the CRD keeps unknown fields there.
    if (schema.get("type") == "object" and "properties" in schema
            and "additionalProperties" not in schema
            and not schema.get("x-kubernetes-preserve-unknown-fields")):
        out["additionalProperties"] = False
    list_type = schema.get("x-kubernetes-list-type")
    if list_type == "set":
        out["uniqueItems"] = True
    elif list_type == "map":
        item_props = schema.get("items", {}).get("properties", {})
        out["listMapKeys"] = {k: item_props.get(k, {}).get("default")
                              for k in schema.get("x-kubernetes-list-map-keys", [])}
    return out


def list_map_keys(validator, keys, instance, schema):
    """x-kubernetes-list-type: map — the API server rejects two items with the same keys
    (a key left out takes its default, e.g. a port's protocol TCP)."""
    if not validator.is_type(instance, "array"):
        return
    seen = {}
    for index, item in enumerate(instance):
        if not isinstance(item, dict):
            continue
        key = tuple(item.get(k, default) for k, default in keys.items())
        if key in seen:
            shown = ", ".join(f"{k}={v!r}" for k, v in zip(keys, key))
            yield jsonschema.ValidationError(
                f"duplicate entry ({shown}); first at index {seen[key]}", path=[index])
        seen.setdefault(key, index)


Validator = jsonschema.validators.extend(jsonschema.Draft4Validator,
                                         {"listMapKeys": list_map_keys})


def load_crd_validators(crd_paths):
    """{kind: {apiVersion: validator}} for every served version of every CRD."""
    validators = {}
    for crd_path in crd_paths:
        crd = next(d for d in yaml.load_all(crd_path.read_text(), Loader=Loader) if d)
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            if not version.get("served", True):
                continue
            schema = to_json_schema(version["schema"]["openAPIV3Schema"])
            Validator.check_schema(schema)
            validators.setdefault(kind, {})[f"{group}/{version['name']}"] = Validator(schema)
    return validators


# --- What the schema cannot say ----------------------------------------------------------


def check_name_and_run_policy(doc, managed_by=MANAGED_BY):
    name = doc["metadata"].get("name")
    if not isinstance(name, str) or len(name) > 63 or not DNS1035.fullmatch(name):
        raise Fault(["metadata", "name"],
                    f"{name!r} is not a DNS-1035 label (lower case, digits, '-'; at most 63)")
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        raise Fault(["spec"], "no spec")
    run_policy = spec.get("runPolicy", {})
    if run_policy.get("cleanPodPolicy", "None") not in CLEAN_POD_POLICIES:
        raise Fault(["spec", "runPolicy", "cleanPodPolicy"],
                    f"{run_policy['cleanPodPolicy']!r} is not one of {', '.join(CLEAN_POD_POLICIES)}")
    if "managedBy" in run_policy and run_policy["managedBy"] not in managed_by:
        raise Fault(["spec", "runPolicy", "managedBy"],
                    f"{run_policy['managedBy']!r} is not one of {', '.join(managed_by)}")
    return name, spec


def replica_count(rspec, at):
    count = rspec.get("replicas", 1)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise Fault(at + ["replicas"], f"{count!r} is not a positive integer")
    return count


def check_tfjob(doc, claims_known):
    """The operator webhook's rules (pkg/webhooks/tensorflow), pod validation the operator
    only meets when it creates the pods, and TF_CONFIG's limits."""
    name, spec = check_name_and_run_policy(doc)
    if spec.get("successPolicy", "") not in SUCCESS_POLICIES:
        raise Fault(["spec", "successPolicy"],
                    f"{spec['successPolicy']!r} is not one of '', 'AllWorkers'")

    replicas = spec.get("tfReplicaSpecs")
    if not replicas:
        raise Fault(["spec", "tfReplicaSpecs"], "no replica types")
    chiefs = [r for r in replicas if r in ("Chief", "Master")]
    if len(chiefs) > 1:
        raise Fault(["spec", "tfReplicaSpecs"], f"both {' and '.join(chiefs)}: at most one")
    counts = []
    for rtype, rspec in replicas.items():
        at = ["spec", "tfReplicaSpecs", rtype]
        if rtype not in REPLICA_TYPES:
            raise Fault(at, f"unknown replica type {rtype!r} (one of {', '.join(REPLICA_TYPES)})")
        if rspec is None:
            raise Fault(at, "empty replica spec")
        count = replica_count(rspec, at)
        # TF_CONFIG holds one chief, and tf.estimator runs at most one evaluator.
        if rtype in ("Chief", "Master", "Evaluator") and count != 1:
            raise Fault(at + ["replicas"], f"{rtype} must have 1 replica, not {count}")
        policy = rspec.get("restartPolicy", "Never")
        if policy not in RESTART_POLICIES:
            raise Fault(at + ["restartPolicy"],
                        f"{policy!r} is not one of {', '.join(RESTART_POLICIES)}")
        check_pod(rspec.get("template", {}).get("spec", {}), at + ["template", "spec"],
                  claims_known)
        counts.append(f"{rtype} {count}")
    return f"TFJob {name} ({', '.join(counts)})"


def check_pytorchjob(doc, claims_known):
    """The operator webhook's rules (pkg/webhooks/pytorch): Master and Worker only, one
    master, a container named `pytorch` (whose `pytorchjob-port` gives MASTER_PORT); the
    pods' rules as for a TFJob."""
    name, spec = check_name_and_run_policy(doc)
    replicas = spec.get("pytorchReplicaSpecs")
    if not replicas:
        raise Fault(["spec", "pytorchReplicaSpecs"], "no replica types")
    if "Master" not in replicas:
        raise Fault(["spec", "pytorchReplicaSpecs"],
                    "no Master: without one the operator sets no RANK, MASTER_ADDR or MASTER_PORT")
    counts = []
    for rtype, rspec in replicas.items():
        at = ["spec", "pytorchReplicaSpecs", rtype]
        if rtype not in PYTORCH_REPLICA_TYPES:
            raise Fault(at, f"unknown replica type {rtype!r} (one of "
                        f"{', '.join(PYTORCH_REPLICA_TYPES)})")
        if rspec is None:
            raise Fault(at, "empty replica spec")
        count = replica_count(rspec, at)
        if rtype == "Master" and count != 1:
            raise Fault(at + ["replicas"], f"Master must have 1 replica, not {count}")
        policy = rspec.get("restartPolicy", "Never")
        if policy not in RESTART_POLICIES:
            raise Fault(at + ["restartPolicy"],
                        f"{policy!r} is not one of {', '.join(RESTART_POLICIES)}")
        check_pod(rspec.get("template", {}).get("spec", {}), at + ["template", "spec"],
                  claims_known, PYTORCH_CONTAINER, "the operator reads MASTER_PORT from that one")
        counts.append(f"{rtype} {count}")
    return f"PyTorchJob {name} ({', '.join(counts)})"


def mpirun_options(argv):
    """mpirun's process count (-np / -n / --np) and the variables its -x options pass."""
    processes, passed = None, {}
    for i, arg in enumerate(argv[:-1]):
        if arg in ("-np", "-n", "--np", "-c"):
            processes = argv[i + 1]
        elif arg == "-x":
            key, _, value = argv[i + 1].partition("=")
            passed[key] = value
    return processes, passed


def check_mpijob(doc, claims_known):
    """The MPI operator's validation (v2beta1): a Launcher of one replica, Workers, restart
    policies Never or OnFailure, a known MPI implementation; and what `mpirun` must give
    dnn-classifier: one process per worker slot, and rank 0's host in MASTER_ADDR when the
    ranks run on several workers (each rank finds the others through rank 0)."""
    name, spec = check_name_and_run_policy(doc, MPI_MANAGED_BY)
    implementation = spec.get("mpiImplementation", "OpenMPI")
    if implementation not in MPI_IMPLEMENTATIONS:
        raise Fault(["spec", "mpiImplementation"],
                    f"{implementation!r} is not one of {', '.join(MPI_IMPLEMENTATIONS)}")
    slots = spec.get("slotsPerWorker", 1)
    replicas = spec.get("mpiReplicaSpecs")
    if not replicas or "Launcher" not in replicas:
        raise Fault(["spec", "mpiReplicaSpecs"], "no Launcher replica spec")
    counts = {}
    for rtype, rspec in replicas.items():
        at = ["spec", "mpiReplicaSpecs", rtype]
        if rtype not in MPI_REPLICA_TYPES:
            raise Fault(at, f"unknown replica type {rtype!r} (one of "
                        f"{', '.join(MPI_REPLICA_TYPES)})")
        if rspec is None:
            raise Fault(at, "empty replica spec")
        if "replicas" not in rspec:
            raise Fault(at, "no replicas: the operator requires the number")
        count = replica_count(rspec, at)
        if rtype == "Launcher" and count != 1:
            raise Fault(at + ["replicas"], f"Launcher must have 1 replica, not {count}")
        default = "OnFailure" if rtype == "Launcher" else "Never"
        policy = rspec.get("restartPolicy", default)
        if policy not in MPI_RESTART_POLICIES:
            raise Fault(at + ["restartPolicy"],
                        f"{policy!r} is not one of {', '.join(MPI_RESTART_POLICIES)}")
        check_pod(rspec.get("template", {}).get("spec", {}), at + ["template", "spec"],
                  claims_known, None, None)
        counts[rtype] = count
    workers = counts.get("Worker", 0)
    longest = f"{name}-worker-{max(workers - 1, 0)}"
    if len(longest) > 63:
        raise Fault(["metadata", "name"], f"{name!r} makes the pod host name {longest!r} "
                    "longer than 63 characters")
    launcher_at = ["spec", "mpiReplicaSpecs", "Launcher", "template", "spec", "containers"]
    for i, container in enumerate(replicas["Launcher"]["template"]["spec"]["containers"]):
        argv = [str(a) for a in (container.get("command") or []) + (container.get("args") or [])]
        if not argv or pathlib.PurePath(argv[0]).name not in ("mpirun", "mpiexec"):
            continue
        if not any("dnn-classifier" in a for a in argv):
            continue
        processes, passed = mpirun_options(argv)
        if processes is not None and str(processes) != str(workers * slots):
            raise Fault(launcher_at + [i, "command"],
                        f"mpirun -np {processes}, but the {workers} worker(s) have "
                        f"{workers * slots} slot(s)")
        if workers * slots > 1 and "MASTER_ADDR" not in passed:
            raise Fault(launcher_at + [i, "command"],
                        "mpirun starts ranks on several pods without -x MASTER_ADDR=<worker 0's "
                        "host>: the ranks cannot find rank 0")
        expected = f"{name}-worker-0.{name}"
        address = passed.get("MASTER_ADDR")
        if address is not None and address != expected and not address.startswith(expected + "."):
            raise Fault(launcher_at + [i, "command"],
                        f"MASTER_ADDR={address}, but rank 0 runs on {expected} (the first "
                        "worker of the hostfile)")
    return f"MPIJob {name} (Launcher 1, Worker {workers})"


CHECKS = {"TFJob": check_tfjob, "PyTorchJob": check_pytorchjob, "MPIJob": check_mpijob}


def check_pod(pod, at, claims_known, main=CONTAINER,
              why="the operator sets TF_CONFIG only in that one"):
    containers = pod.get("containers") or []
    if not containers:
        raise Fault(at + ["containers"], "no container")
    if main is not None and not any(c.get("name") == main for c in containers):
        raise Fault(at + ["containers"], f"no container named {main!r} ({why})")
    volumes = {v.get("name"): (i, v) for i, v in enumerate(pod.get("volumes") or [])}
    for i, container in enumerate(containers):
        c_at = at + ["containers", i]
        if not container.get("image"):
            raise Fault(c_at + ["image"], "no image")
        for j, mount in enumerate(container.get("volumeMounts") or []):
            if mount.get("name") not in volumes:
                raise Fault(c_at + ["volumeMounts", j, "name"],
                            f"mounts {mount.get('name')!r}, which the pod's volumes do not declare")
        check_resources(container, c_at, main)
    for name, (i, volume) in volumes.items():
        claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
        if claim is not None and claim not in claims_known:
            raise Fault(at + ["volumes", i, "persistentVolumeClaim", "claimName"],
                        f"claim {claim!r} is declared neither in this file nor in a manifest "
                        "this file names")


def is_extended_resource(name):
    domain = name.split("/", 1)[0] if "/" in name else ""
    return bool(domain) and not (domain == "kubernetes.io" or domain.endswith(".kubernetes.io"))


def check_resources(container, at, main):
    resources = container.get("resources") or {}
    limits, requests = resources.get("limits") or {}, resources.get("requests") or {}
    # The API server refuses a pod whose extended resource (a GPU) is requested but not
    # limited, differs between the two, or is fractional: a TFJob that says so is accepted,
    # and then no pod is ever created.
    for name, value in limits.items():
        if is_extended_resource(name) and not re.fullmatch(r"[0-9]+", str(value)):
            raise Fault(at + ["resources", "limits", name], f"{value!r} is not a whole number")
    for name, value in requests.items():
        if is_extended_resource(name) and str(limits.get(name)) != str(value):
            limit = "has no limit" if name not in limits else f"is limited to {limits[name]!r}"
            raise Fault(at + ["resources", "requests", name],
                        f"{name} is requested ({value!r}) but {limit}: an extended resource "
                        "goes in limits (its request defaults to the limit)")
    if main is not None and container.get("name") != main:
        return
    argv = [str(a) for a in (container.get("command") or []) + (container.get("args") or [])]
    on_cuda = any(a.startswith("--device=cuda") or (a == "--device" and i + 1 < len(argv)
                  and argv[i + 1].startswith("cuda")) for i, a in enumerate(argv))
    gpus = limits.get("nvidia.com/gpu")
    has_gpu = gpus is not None and str(gpus) != "0"
    if on_cuda and not has_gpu:
        raise Fault(at + ["resources", "limits"],
                    "runs with --device cuda but has no nvidia.com/gpu limit: no GPU is visible")
    if has_gpu and not on_cuda and any("dnn-classifier" in a for a in argv):
        raise Fault(at + ["command"],
                    "holds nvidia.com/gpu but dnn-classifier runs without --device cuda")


# --- Files -------------------------------------------------------------------------------


def load_documents(path):
    text = path.read_text()
    nodes = [n for n in yaml.compose_all(text, Loader=Loader) if n is not None]
    return text, [(node, Loader("").construct_document(node)) for node in nodes]


def declared_claims(docs):
    return {doc["metadata"]["name"] for _, doc in docs
            if isinstance(doc, dict) and doc.get("kind") == "PersistentVolumeClaim"
            and isinstance(doc.get("metadata"), dict) and "name" in doc["metadata"]}


def claims_in_reach(path, text, docs):
    """Claims this file declares, and those of the manifests beside it that it names (the
    jobs that share the volumes of another manifest say which one creates them)."""
    claims = declared_claims(docs)
    for other in sorted(path.parent.glob("*.yaml")):
        if other != path and other.name in text:
            try:
                claims |= declared_claims(load_documents(other)[1])
            except (OSError, yaml.YAMLError):
                pass
    return claims


def check_file(path, validators):
    """One summary line for the file, or a Fault-bearing error line."""
    try:
        text, docs = load_documents(path)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f":{mark.line + 1}" if mark else ""
        return False, f"{path}{line}: not YAML: {getattr(err, 'problem', err)}"
    claims = claims_in_reach(path, text, docs)
    summary = []
    for index, (node, doc) in enumerate(docs, start=1):
        where = f"document {index}"
        try:
            if not isinstance(doc, dict) or "kind" not in doc or "apiVersion" not in doc:
                raise Fault([], "not a Kubernetes object (no apiVersion/kind)")
            if not isinstance(doc.get("metadata"), dict):
                raise Fault(["metadata"], "no metadata")
            where += f" ({doc['kind']} {doc['metadata'].get('name', '?')})"
            kind = doc["kind"]
            if kind not in validators:
                summary.append(f"{kind} {doc['metadata'].get('name', '?')}")
                continue
            validator = validators[kind].get(doc["apiVersion"])
            if validator is None:
                raise Fault(["apiVersion"], f"{doc['apiVersion']!r} is not served by the "
                            f"{kind} CRD ({', '.join(validators[kind])})")
            error = jsonschema.exceptions.best_match(validator.iter_errors(doc))
            if error is not None:
                raise Fault(error.absolute_path, error.message)
            summary.append(CHECKS[kind](doc, claims))
        except Fault as fault:
            line = line_of(node, fault.path)
            return False, f"{path}:{line}: {where}: {json_path(fault.path)}: {fault.message}"
    if not any(s.split(" ")[0] in validators for s in summary):
        return True, f"{path}: no job ({'; '.join(summary) or 'empty'})"
    return True, f"{path}: {'; '.join(summary)}"


def display(path):
    try:
        return path.resolve().relative_to(pathlib.Path.cwd())
    except ValueError:
        return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=pathlib.Path,
                        help="manifests to check (default: examples/k8s/*.yaml)")
    parser.add_argument("--crd", type=pathlib.Path, action="append",
                        help="a CRD to check against (repeatable; default: "
                             "examples/k8s/crd/*.yaml)")
    parser.add_argument("--expect-invalid", type=pathlib.Path, metavar="DIR",
                        help="every DIR/*.yaml must be rejected, for the fault its "
                             "`# expect-error:` comment names")
    args = parser.parse_args()
    validators = load_crd_validators(args.crd or sorted(DEFAULT_CRDS.glob("*.yaml")))

    if args.expect_invalid:
        fixtures = sorted(args.expect_invalid.glob("*.yaml"))
        if not fixtures:
            sys.exit(f"check_k8s_manifests: no fixtures in {args.expect_invalid}")
        failed = False
        for path in fixtures:
            expected = re.search(r"^# expect-error: (.+)$", path.read_text(), re.M)
            ok, line = check_file(display(path), validators)
            if ok:
                print(f"check_k8s_manifests: {line}: accepted, but must be rejected",
                      file=sys.stderr)
                failed = True
            elif expected is None or expected.group(1).strip() not in line:
                want = expected.group(1).strip() if expected else "(no # expect-error: line)"
                print(f"check_k8s_manifests: {line}: rejected, but not for {want!r}",
                      file=sys.stderr)
                failed = True
            else:
                print(f"rejected  {line}")
        sys.exit(1 if failed else 0)

    files = args.files or sorted(DEFAULT_DIR.glob("*.yaml"))
    failed = False
    for path in files:
        ok, line = check_file(display(path), validators)
        if ok:
            print(f"ok  {line}")
        else:
            print(f"check_k8s_manifests: {line}", file=sys.stderr)
            failed = True
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
