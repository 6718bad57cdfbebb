#!/usr/bin/env python3
"""Renders deploy/kubernetes, deploy/kubernetes/job, deploy/kubernetes/shards (and its merge/)
and deploy/monitoring with `kubectl kustomize` (no cluster needed) and checks that what they
render fits together: the Job streams a file from its volume through the daemons' headless
Service with --output and --resume, restarts on failure within a backoffLimit, runs the daemons'
image, and is no endpoint of the daemons' Service; the Indexed Job runs one shard per index
(completions equal to the N of --shard K/N, K its JOB_COMPLETION_INDEX) into a part of its own on
a ReadWriteMany claim (its shards-s3 variant with no volume: an s3:// input, s3:// parts and a
merge reading them, the store's settings from a Secret), with a backoffLimitPerIndex, a podFailurePolicy that ignores disruptions,
and status 1 taken as success, and its merge reads those parts from the same claim; the ServiceMonitor scrapes a port the daemons' metrics Service has, and the
NetworkPolicy holds the daemons (not the Job) and lets gRPC and that port in; and the daemons'
drain fits their pod: PATIENCE_DRAIN_CUT_AFTER is set, below PATIENCE_DRAIN_TIMEOUT, and
terminationGracePeriodSeconds is longer than that timeout plus any preStop sleep.

Usage: check_kubernetes.py --kubectl PATH   (CI passes the pinned kubectl of target/tools/venv)
"""

import argparse
import os
import re
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def render(kubectl, directory):
    out = subprocess.run(
        [kubectl, "kustomize", os.path.join(ROOT, directory)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def one(docs, kind, name=None):
    found = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    if len(found) != 1:
        sys.exit(f"kubernetes: want one {kind} {name or ''}, rendered {len(found)}")
    return found[0]


def seconds(text):
    """A duration as the daemon reads it (500ms, 30s, 2m, or plain seconds), in seconds; None for
    off, 0 or anything else."""
    text = str(text).strip()
    for suffix, scale in (("ms", 1e-3), ("s", 1.0), ("m", 60.0), ("", 1.0)):
        if text.endswith(suffix):
            try:
                value = float(text[: len(text) - len(suffix)]) * scale
            except ValueError:
                return None
            return value if value > 0 else None
    return None


def policy_selector(daemons):
    return one(daemons, "NetworkPolicy", "patience")["spec"]["podSelector"]["matchLabels"]


def selects(selector, labels):
    return all(labels.get(k) == v for k, v in selector.items())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kubectl", default="kubectl")
    kubectl = parser.parse_args().kubectl
    daemons = render(kubectl, "deploy/kubernetes")
    job_docs = render(kubectl, "deploy/kubernetes/job")
    checks = []

    def check(ok, what):
        if not ok:
            sys.exit(f"kubernetes: {what}")
        checks.append(what)

    deployment = one(daemons, "Deployment", "patience")
    service = one(daemons, "Service", "patience-headless")
    pdb = one(daemons, "PodDisruptionBudget")
    check(service["spec"].get("clusterIP") == "None", "the daemons' Service is headless")
    grpc = [p for p in service["spec"]["ports"] if p["name"] == "grpc"]
    check(len(grpc) == 1, "the Service has a grpc port")
    port = grpc[0]["port"]

    # The drain (docs/deploying.md, "Probes and shutdown"): on SIGTERM calls in flight are
    # answered for up to PATIENCE_DRAIN_TIMEOUT; a stream still being sent to is cut after
    # PATIENCE_DRAIN_CUT_AFTER, so that a client streaming a large file resumes on the other pods
    # at once instead of keeping a pod being rolled busy until the timeout; and the kubelet's
    # SIGKILL must come after the timeout, or the drain is killed mid-way.
    pod_spec = deployment["spec"]["template"]["spec"]
    (daemon,) = [c for c in pod_spec["containers"] if c["name"] == "patience"]
    env = {e["name"]: e.get("value") for e in daemon.get("env", [])}
    drain = seconds(env.get("PATIENCE_DRAIN_TIMEOUT", "30s"))
    check(drain is not None, f"the drain timeout is a duration ({env.get('PATIENCE_DRAIN_TIMEOUT')})")
    cut = seconds(env.get("PATIENCE_DRAIN_CUT_AFTER", "off"))
    check(cut is not None, "the daemons set PATIENCE_DRAIN_CUT_AFTER (a duration, not off)")
    check(cut < drain, f"the drain cut ({cut:g} s) comes before the drain timeout ({drain:g} s)")
    pre_stop = daemon.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command", [])
    sleep = seconds(pre_stop[-1]) if pre_stop and pre_stop[0] in ("sleep", "/bin/sleep") else None
    grace = pod_spec.get("terminationGracePeriodSeconds", 30)
    check(
        grace > drain + (sleep or 0),
        f"terminationGracePeriodSeconds ({grace}) is longer than the drain timeout ({drain:g} s)"
        + (f" plus the preStop sleep ({sleep:g} s)" if sleep else ""),
    )

    job = one(job_docs, "Job", "patience-batch")
    claim = one(job_docs, "PersistentVolumeClaim")
    check(job["apiVersion"] == "batch/v1", "the Job is batch/v1")
    spec = job["spec"]
    check(isinstance(spec.get("backoffLimit"), int) and spec["backoffLimit"] >= 1, "the Job has a backoffLimit")
    pod = spec["template"]["spec"]
    check(pod.get("restartPolicy") == "OnFailure", "its pod restarts on failure")
    (container,) = pod["containers"]
    image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    check(container["image"] == image, f"it runs the daemons' image ({image})")
    script = " ".join(container.get("command", []) + container.get("args", []))
    words = script.split()
    check("patience client" in script, "it runs patience client")
    check(f"--addr dns:///{service['metadata']['name']}:{port}" in script, "through the headless Service's name and port")
    check("--resume" in words and "--output" in words, "with --output and --resume")
    check("--progress log" in script, "with --progress log")
    output = words[words.index("--output") + 1]
    inputs = [w for w in words if w.startswith("/") and w != output and not w.startswith("/bin/")]
    check(inputs, "it reads a file")
    mounts = {m["name"]: m["mountPath"] for m in container.get("volumeMounts", [])}
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    for path in [output] + inputs:
        mounted = [name for name, at in mounts.items() if path.startswith(at.rstrip("/") + "/")]
        check(mounted, f"{path} is on a mounted volume")
        volume = volumes[mounted[0]]
        check(
            volume.get("persistentVolumeClaim", {}).get("claimName") == claim["metadata"]["name"],
            f"{path} is on the claim the kustomization makes",
        )
    labels = spec["template"]["metadata"].get("labels", {})
    check(not selects(service["spec"]["selector"], labels), "the Job's pod is no endpoint of the daemons' Service")
    check(not selects(pdb["spec"]["selector"]["matchLabels"], labels), "nor counted by their PodDisruptionBudget")
    check(pod["securityContext"].get("runAsNonRoot") is True, "it runs as non-root")
    check(re.search(r"\|\|\s*\[\s*\"\$\?\"\s+-eq\s+1\s*\]", script), "status 1 (bad deals, all answered) is a success")

    # deploy/kubernetes/shards: an Indexed Job of one shard per index, then its merge.
    shard_docs = render(kubectl, "deploy/kubernetes/shards")
    merge_docs = render(kubectl, "deploy/kubernetes/shards/merge")
    indexed = one(shard_docs, "Job", "patience-shards")
    shared = one(shard_docs, "PersistentVolumeClaim")
    spec = indexed["spec"]
    check(spec.get("completionMode") == "Indexed", "the sharded Job is Indexed")
    completions = spec.get("completions")
    check(isinstance(completions, int) and completions >= 1, "it has completions")
    check(1 <= spec.get("parallelism", completions) <= completions, "parallelism is at most completions")
    check(isinstance(spec.get("backoffLimitPerIndex"), int) and spec["backoffLimitPerIndex"] >= 1, "it has a backoffLimitPerIndex")
    rules = spec.get("podFailurePolicy", {}).get("rules", [])
    check(
        any(
            r.get("action") == "Ignore" and any(c.get("type") == "DisruptionTarget" for c in r.get("onPodConditions", []))
            for r in rules
        ),
        "its podFailurePolicy ignores disruptions",
    )
    pod = spec["template"]["spec"]
    check(pod.get("restartPolicy") == "Never", "its pods are not restarted in place (podFailurePolicy needs Never)")
    (container,) = pod["containers"]
    check(container["image"] == image, f"it runs the daemons' image ({image})")
    script = " ".join(container.get("command", []) + container.get("args", []))
    words = script.split()
    check("patience client" in script, "each pod runs patience client")
    check(f"--addr dns:///{service['metadata']['name']}:{port}" in script, "through the headless Service's name and port")
    shard = re.search(r'--shard "\$JOB_COMPLETION_INDEX/(\d+)"', script)
    check(shard is not None, "each pod is the shard of its JOB_COMPLETION_INDEX")
    check(int(shard.group(1)) == completions, f"of as many shards as completions ({completions})")
    check("--resume" in words and "--output" in words, "with --output and --resume")
    part = words[words.index("--output") + 1].strip('"')
    check("$JOB_COMPLETION_INDEX" in part, f"into a part of its own ({part})")
    mounts = {m["name"]: m["mountPath"] for m in container.get("volumeMounts", [])}
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    (mounted,) = [name for name, at in mounts.items() if part.startswith(at.rstrip("/") + "/")]
    check(
        volumes[mounted].get("persistentVolumeClaim", {}).get("claimName") == shared["metadata"]["name"],
        "the part is on the claim the kustomization makes",
    )
    check("ReadWriteMany" in shared["spec"]["accessModes"], "which pods on many nodes can write at once")
    check(re.search(r"\|\|\s*\[\s*\"\$\?\"\s+-eq\s+1\s*\]", script), "status 1 (bad deals, all answered) is a success")
    shard_labels = spec["template"]["metadata"].get("labels", {})
    check(not selects(service["spec"]["selector"], shard_labels), "the shards' pods are no endpoints of the daemons' Service")
    check(not selects(policy_selector(daemons), shard_labels), "nor held by the daemons' NetworkPolicy")
    merge = one(merge_docs, "Job", "patience-merge")
    (merger,) = merge["spec"]["template"]["spec"]["containers"]
    check(merger["image"] == image, "the merge runs the daemons' image")
    merging = " ".join(merger.get("command", []) + merger.get("args", []))
    parts = part.replace("$JOB_COMPLETION_INDEX", "*")
    check(re.search(r"patience merge --output \S+ " + re.escape(parts), merging), f"the merge reads every part ({parts})")
    claims = [v.get("persistentVolumeClaim", {}).get("claimName") for v in merge["spec"]["template"]["spec"].get("volumes", [])]
    check(claims == [shared["metadata"]["name"]], "from the shards' claim")

    # deploy/kubernetes/shards-s3: the same Indexed Job on object storage, with no volume: its
    # deals in an object, its parts objects, the store and its credentials from a Secret; and its
    # merge reading exactly those parts from the store. Nothing else changed.
    s3_docs = render(kubectl, "deploy/kubernetes/shards-s3")
    s3_job = one(s3_docs, "Job", "patience-shards")
    s3_pod = s3_job["spec"]["template"]["spec"]
    (s3_container,) = s3_pod["containers"]
    s3_script = " ".join(s3_container.get("command", []) + s3_container.get("args", []))
    s3_words = s3_script.split()
    s3_input = re.search(r" (s3://[^/\s]+/\S+) ", s3_script)
    check(s3_input is not None, "the object storage variant reads an s3:// input")
    check("--output" in s3_words, "it has an --output")
    s3_part = s3_words[s3_words.index("--output") + 1].strip('"')
    check(
        s3_part.startswith("s3://") and "$JOB_COMPLETION_INDEX" in s3_part,
        f"each pod's part is an object of its own ({s3_part})",
    )
    as_files = s3_script.replace(s3_input.group(1), "/data/deals.in").replace(s3_part, part)
    check(
        as_files.replace("-c patience", "-c mkdir -p /data/parts && patience", 1) == script,
        "with the sharded Job's command otherwise",
    )
    secret = ["patience-s3"]
    check(
        [e.get("secretRef", {}).get("name") for e in s3_container.get("envFrom", [])] == secret,
        "and the store's settings and credentials from the Secret patience-s3",
    )
    check(
        "volumes" not in s3_pod
        and "volumeMounts" not in s3_container
        and not [d for d in s3_docs if d["kind"] == "PersistentVolumeClaim"],
        "no volume: its pods may run on any node",
    )
    unchanged = lambda job: (  # noqa: E731
        {k: v for k, v in job.items() if k != "spec"},
        {k: v for k, v in job["spec"].items() if k != "template"},
    )
    check(unchanged(s3_job) == unchanged(indexed), "the Indexed Job's settings as they were")
    check(
        "podReplacementPolicy" not in s3_job["spec"] and s3_job["spec"].get("podFailurePolicy"),
        "a podFailurePolicy, so a replacement pod starts only once the failed one has ended "
        "(podReplacementPolicy Failed, what keeps two pods from writing one object part)",
    )
    s3_merge_docs = render(kubectl, "deploy/kubernetes/shards-s3/merge")
    s3_merge = one(s3_merge_docs, "Job", "patience-merge")
    s3_merge_pod = s3_merge["spec"]["template"]["spec"]
    (s3_merger,) = s3_merge_pod["containers"]
    s3_merging = " ".join(s3_merger.get("command", []) + s3_merger.get("args", []))
    merged = re.search(r"patience merge --output (s3://\S+) ((?:s3://\S+ )+)\|\|", s3_merging)
    check(merged is not None, "its merge writes an object from objects")
    wanted = [s3_part.replace("$JOB_COMPLETION_INDEX", str(k)) for k in range(completions)]
    check(merged.group(2).split() == wanted, f"the merge reads every part, once ({len(wanted)})")
    check(merged.group(1) not in wanted, "into an object that is none of them")
    check(
        [e.get("secretRef", {}).get("name") for e in s3_merger.get("envFrom", [])] == secret
        and "volumes" not in s3_merge_pod,
        "from the same Secret, with no volume",
    )
    check(
        re.search(r"\|\|\s*\[\s*\"\$\?\"\s+-eq\s+1\s*\]", s3_merging),
        "status 1 (bad deals, all answered) is a success",
    )
    check(unchanged(s3_merge) == unchanged(merge), "the merge Job's settings as they were")

    # deploy/kubernetes/jobs: one daemon with jobs, its --jobs-dir a volume of its own that
    # outlives the pod (a claim per pod of a StatefulSet), never shared by two daemons, its
    # drain within the grace period; S3 credentials from an optional Secret.
    jobs_docs = render(kubectl, "deploy/kubernetes/jobs")
    jobs_set = one(jobs_docs, "StatefulSet", "patience-jobs")
    check(jobs_set["spec"]["replicas"] == 1, "one daemon owns the jobs' folder")
    jobs_pod = jobs_set["spec"]["template"]["spec"]
    jobs_container = jobs_pod["containers"][0]
    check(jobs_container["image"] == image, f"the jobs daemon runs the daemons' image ({image})")
    jobs_env = {e["name"]: e.get("value") for e in jobs_container.get("env", [])}
    folder = jobs_env.get("PATIENCE_JOBS_DIR")
    mounts = {m["mountPath"]: m["name"] for m in jobs_container.get("volumeMounts", [])}
    claims = [c["metadata"]["name"] for c in jobs_set["spec"].get("volumeClaimTemplates", [])]
    check(folder in mounts and mounts[folder] in claims, "PATIENCE_JOBS_DIR is the pod's own claimed volume")
    check(int(jobs_env.get("PATIENCE_MAX_JOBS", "0")) >= 1, "PATIENCE_MAX_JOBS is set")
    check(
        jobs_pod.get("terminationGracePeriodSeconds", 30) > seconds(jobs_env.get("PATIENCE_DRAIN_TIMEOUT", "30s")),
        "the grace period is longer than the drain timeout",
    )
    secrets = [e["secretRef"] for e in jobs_container.get("envFrom", []) if "secretRef" in e]
    check(any(ref.get("optional") for ref in secrets), "S3 credentials come from an optional Secret")
    jobs_service = one(jobs_docs, "Service", "patience-jobs")
    check(selects(jobs_service["spec"]["selector"], jobs_set["spec"]["template"]["metadata"]["labels"]), "its Service selects it")
    check(not selects(service["spec"]["selector"], jobs_set["spec"]["template"]["metadata"]["labels"]), "and the daemons' Service does not")

    # deploy/monitoring: its ServiceMonitor scrapes the daemons' metrics Service by port name, and
    # the NetworkPolicy lets that port in (from the monitoring namespace).
    monitoring = render(kubectl, "deploy/monitoring")
    monitor = one(monitoring, "ServiceMonitor", "patience")
    one(monitoring, "PrometheusRule", "patience")
    one(monitoring, "ConfigMap", "patience-dashboard")
    scraped = [
        s
        for s in daemons
        if s["kind"] == "Service" and selects(monitor["spec"]["selector"]["matchLabels"], s["metadata"].get("labels", {}))
    ]
    check(len(scraped) == 1, "the ServiceMonitor selects one Service of the daemons")
    jobs_scraped = [
        s
        for s in jobs_docs
        if s["kind"] == "Service" and selects(monitor["spec"]["selector"]["matchLabels"], s["metadata"].get("labels", {}))
    ]
    check(
        len(jobs_scraped) == 1
        and selects(jobs_scraped[0]["spec"]["selector"], jobs_set["spec"]["template"]["metadata"]["labels"])
        and any(p["name"] == monitor["spec"]["endpoints"][0]["port"] for p in jobs_scraped[0]["spec"]["ports"]),
        "the ServiceMonitor scrapes the jobs daemon too (its work is what the autoscaler reads)",
    )
    endpoint = monitor["spec"]["endpoints"][0]["port"]
    check(endpoint in [p["name"] for p in scraped[0]["spec"]["ports"]], f"that Service has the port it scrapes ({endpoint})")
    policy = one(daemons, "NetworkPolicy", "patience")
    check(selects(policy["spec"]["podSelector"]["matchLabels"], deployment["spec"]["template"]["metadata"]["labels"]), "the NetworkPolicy holds the daemons")
    check(not selects(policy["spec"]["podSelector"]["matchLabels"], labels), "and not the Job's pod, which must reach them")
    allowed = [p["port"] for rule in policy["spec"]["ingress"] for p in rule.get("ports", [])]
    check("grpc" in allowed and endpoint in allowed, "it lets gRPC and the metrics port in")
    print(f"kubernetes manifests: {len(checks)} checks passed")


if __name__ == "__main__":
    main()
