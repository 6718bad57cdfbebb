//! The KEDA autoscaling of `deploy/kubernetes/autoscaling`, checked without a cluster: rendered
//! with `kubectl kustomize`, its ScaledObject checked against KEDA's schema (the validators of
//! npm's `@kubernetes-models/keda`, generated from KEDA's API types, through
//! `tests/keda/validate.mjs`, which also refuses a field the schema does not know), its query held
//! to the recording rule that `deploy/monitoring/rules.test.yaml` tests, its target to the
//! Deployment `deploy/kubernetes` renders, and the overlay docs/operations.md shows rendered too.
//!
//! kubectl comes from the tools venv (`PATIENCE_VENV`, else `target/tools/venv`), else the PATH;
//! node from `PATIENCE_NODE`, else the PATH, with the schema's modules in
//! `target/tools/keda/node_modules` (`npm ci` of `tests/keda/`, as `.ci/run` does). Where
//! `PATIENCE_VENV` or `PATIENCE_NODE` is given (as `.ci/run` gives both), a missing one fails the
//! tests; elsewhere they are skipped, saying so.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use serde_json::Value;

use crate::common::process::{ran, succeeds};
use crate::common::{self, Scratch};
use crate::monitoring::rule_lines;

/// The recording rule the ScaledObject's query must be.
const RULE: &str = "patience:jobs_work_seconds:sum";

/// The trigger metadata KEDA's prometheus scaler reads (the `keda:"name=..."` tags of
/// `pkg/scalers/prometheus_scaler.go`): the CRD types `metadata` as any map of strings, so a
/// misspelt key passes the schema and is ignored by KEDA, and only this list catches it.
const PROMETHEUS_PARAMETERS: &[&str] = &[
    "serverAddress",
    "query",
    "queryParameters",
    "threshold",
    "activationThreshold",
    "namespace",
    "customHeaders",
    "ignoreNullValues",
    "unsafeSsl",
    "awsRegion",
    "timeout",
    "identityOwner",
    "authModes",
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

struct Tools {
    kubectl: PathBuf,
    node: PathBuf,
    /// The node_modules holding `@kubernetes-models/keda` and `yaml`.
    modules: PathBuf,
}

/// kubectl and node with KEDA's schema, or `None` (said) where they are missing and no variable
/// asks for them.
fn tools() -> Option<&'static Tools> {
    static TOOLS: OnceLock<Option<Tools>> = OnceLock::new();
    TOOLS
        .get_or_init(|| {
            let in_venv = common::venv().join("bin/kubectl");
            let kubectl = if in_venv.is_file() {
                in_venv
            } else {
                assert!(
                    std::env::var_os("PATIENCE_VENV").is_none(),
                    "PATIENCE_VENV has no bin/kubectl (.ci/run installs it there)"
                );
                PathBuf::from("kubectl")
            };
            let given = std::env::var_os("PATIENCE_NODE");
            let node = given
                .clone()
                .map_or_else(|| PathBuf::from("node"), PathBuf::from);
            let modules = root().join("target/tools/keda/node_modules");
            let keda = modules.join("@kubernetes-models/keda/package.json");
            let node_ready = succeeds(&node, &["--version"]) && keda.is_file();
            assert!(
                node_ready || given.is_none(),
                "PATIENCE_NODE={} does not run, or {} is missing (.ci/run installs it: npm ci of \
                 tests/keda/ in target/tools/keda)",
                node.display(),
                keda.display()
            );
            let kubectl_ready = succeeds(&kubectl, &["version", "--client"]);
            if !(node_ready && kubectl_ready) {
                eprintln!(
                    "skipped the autoscaling checks: they need kubectl (in target/tools/venv, \
                     PATIENCE_VENV or the PATH), node (PATIENCE_NODE or the PATH) and KEDA's \
                     schema in target/tools/keda (cp tests/keda/package*.json target/tools/keda \
                     && npm ci --prefix target/tools/keda), which .ci/run installs"
                );
                return None;
            }
            Some(Tools {
                kubectl,
                node,
                modules,
            })
        })
        .as_ref()
}

/// `kubectl kustomize DIR`: the YAML it renders.
fn kustomize(tools: &Tools, dir: &Path) -> String {
    ran(
        Command::new(&tools.kubectl).arg("kustomize").arg(dir),
        &format!("kubectl kustomize {}", dir.display()),
    )
}

/// YAML documents through `tests/keda/validate.mjs`: the documents, or what it says is wrong
/// with a ScaledObject among them.
fn keda_schema(tools: &Tools, yaml: &str) -> Result<Vec<Value>, String> {
    let mut child = Command::new(&tools.node)
        .arg(root().join("tests/keda/validate.mjs"))
        .arg(&tools.modules)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run node");
    child
        .stdin
        .take()
        .expect("its standard input")
        .write_all(yaml.as_bytes())
        .expect("write the documents");
    let out = child.wait_with_output().expect("wait for node");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    match out.status.code() {
        Some(0) => Ok(serde_json::from_slice(&out.stdout).expect("the documents as JSON")),
        Some(1) => Err(stderr),
        _ => panic!("tests/keda/validate.mjs failed: {stderr}"),
    }
}

/// What `dir` renders, every ScaledObject in it passed by KEDA's schema.
fn rendered(tools: &Tools, dir: &Path) -> Vec<Value> {
    keda_schema(tools, &kustomize(tools, dir))
        .unwrap_or_else(|refused| panic!("KEDA's schema refuses {}:\n{refused}", dir.display()))
}

/// The one document of `kind` among `docs`.
fn one<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    let found: Vec<&Value> = docs.iter().filter(|d| d["kind"] == kind).collect();
    assert_eq!(found.len(), 1, "want one {kind}, found {}", found.len());
    found[0]
}

/// The ScaledObject `deploy/kubernetes/autoscaling` renders, alone there.
fn scaled_object(tools: &Tools) -> Value {
    let docs = rendered(tools, &root().join("deploy/kubernetes/autoscaling"));
    assert_eq!(
        docs.len(),
        1,
        "the autoscaling kustomization holds one document: {docs:?}"
    );
    one(&docs, "ScaledObject").clone()
}

/// A string field of the prometheus trigger's metadata.
fn parameter<'a>(scaled: &'a Value, name: &str) -> &'a str {
    scaled["spec"]["triggers"][0]["metadata"][name]
        .as_str()
        .unwrap_or_else(|| panic!("the trigger has no {name}"))
}

#[test]
fn keda_s_schema_accepts_the_rendered_scaled_object() {
    let Some(tools) = tools() else { return };
    let scaled = scaled_object(tools);
    assert_eq!(scaled["apiVersion"], "keda.sh/v1alpha1");
    assert_eq!(scaled["metadata"]["name"], "patience");
}

/// Where the HPA's scale-in behavior sits in a ScaledObject.
const SCALE_DOWN: &str = "/spec/advanced/horizontalPodAutoscalerConfig/behavior/scaleDown";

/// The value at `pointer` in `doc`.
fn at<'a>(doc: &'a mut Value, pointer: &str) -> &'a mut Value {
    doc.pointer_mut(pointer)
        .unwrap_or_else(|| panic!("the ScaledObject has no {pointer}"))
}

/// `doc` with the field `from` of the object at `pointer` renamed `to`.
fn rename(doc: &mut Value, pointer: &str, from: &str, to: &str) {
    let object = at(doc, pointer).as_object_mut().expect("an object");
    let value = object.remove(from).expect("the field");
    object.insert(to.into(), value);
}

/// The check can fail: the ScaledObject with one field misspelt (at the top of its spec, or deep
/// in the HPA's behavior) or of a wrong type (a string or a fraction for an integer, a number
/// where KEDA's trigger metadata takes strings) is refused, and the refusal names the field.
#[test]
fn keda_s_schema_refuses_a_misspelt_field_and_a_wrong_type() {
    let Some(tools) = tools() else { return };
    let good = scaled_object(tools);
    type Spoil = fn(&mut Value);
    let spoilt: [(&str, Spoil, String); 5] = [
        (
            "cooldownPeriod misspelt",
            |v| rename(v, "/spec", "cooldownPeriod", "cooldownPerod"),
            "/spec/cooldownPerod is no field of KEDA's ScaledObject".into(),
        ),
        (
            "the scale-in's stabilizationWindowSeconds misspelt",
            |v| {
                rename(
                    v,
                    SCALE_DOWN,
                    "stabilizationWindowSeconds",
                    "stabilisationWindowSeconds",
                )
            },
            format!("{SCALE_DOWN}/stabilisationWindowSeconds is no field of KEDA's ScaledObject"),
        ),
        (
            "minReplicaCount a string",
            |v| *at(v, "/spec/minReplicaCount") = "3".into(),
            "/spec/minReplicaCount must be integer".into(),
        ),
        (
            "a scale-in policy's value a fraction",
            |v| *at(v, &format!("{SCALE_DOWN}/policies/0/value")) = 1.5.into(),
            format!("{SCALE_DOWN}/policies/0/value must be integer"),
        ),
        (
            "the threshold a number",
            |v| *at(v, "/spec/triggers/0/metadata/threshold") = 300.into(),
            "/spec/triggers/0/metadata/threshold must be string".into(),
        ),
    ];
    for (what, spoil, said) in spoilt {
        let mut bad = good.clone();
        spoil(&mut bad);
        // JSON is YAML.
        match keda_schema(tools, &bad.to_string()) {
            Ok(_) => panic!("KEDA's schema let through the ScaledObject with {what}"),
            Err(refused) => assert!(
                refused.contains(&said),
                "{what}: the refusal does not say {said:?}:\n{refused}"
            ),
        }
    }
}

/// It scales the Deployment that `deploy/kubernetes` renders, in the same namespace, never below
/// that Deployment's own count (so never to zero), and scales in gently.
#[test]
fn it_scales_the_fleet_of_deploy_kubernetes_never_to_zero() {
    let Some(tools) = tools() else { return };
    let scaled = scaled_object(tools);
    let fleet = rendered(tools, &root().join("deploy/kubernetes"));
    let deployment = one(&fleet, "Deployment");
    let target = &scaled["spec"]["scaleTargetRef"];
    assert_eq!(target["apiVersion"], deployment["apiVersion"]);
    assert_eq!(target["kind"], "Deployment");
    assert_eq!(target["name"], deployment["metadata"]["name"]);
    assert_eq!(
        scaled["metadata"]["namespace"], deployment["metadata"]["namespace"],
        "KEDA scales a target in its own namespace"
    );
    let spec = &scaled["spec"];
    let min = spec["minReplicaCount"].as_u64().expect("a minReplicaCount");
    let max = spec["maxReplicaCount"].as_u64().expect("a maxReplicaCount");
    let unscaled = deployment["spec"]["replicas"].as_u64().expect("replicas");
    assert!(
        min >= unscaled && unscaled >= 1,
        "minReplicaCount {min} is below the unscaled Deployment's {unscaled}"
    );
    assert!(max > min, "maxReplicaCount {max} leaves nothing to scale");
    assert!(
        spec.get("idleReplicaCount").is_none(),
        "idleReplicaCount would take the fleet below its minimum"
    );
    let down = scaled.pointer(SCALE_DOWN).expect("a scale-in behavior");
    assert!(
        down["stabilizationWindowSeconds"].as_u64() >= Some(300),
        "scale-in acts on less than 5 minutes of history: {down}"
    );
    let policies = down["policies"].as_array().expect("scale-down policies");
    assert!(
        !policies.is_empty()
            && policies.iter().all(|p| p["type"] == "Pods"
                && p["value"] == 1
                && p["periodSeconds"].as_u64() >= Some(60)),
        "scale-in removes more than one pod a minute: {down}"
    );
}

/// Its query is the recording rule itself, a `record:` of rules.yaml that rules.test.yaml tests
/// (promtool runs them in tests/monitoring.rs), read from the Prometheus of the namespace
/// `monitoring`; the trigger names only parameters KEDA's prometheus scaler reads, and an empty
/// answer is an error rather than no work.
#[test]
fn its_query_is_the_recording_rule_the_promtool_tests_cover() {
    let Some(tools) = tools() else { return };
    let scaled = scaled_object(tools);
    let triggers = scaled["spec"]["triggers"].as_array().expect("triggers");
    assert_eq!(triggers.len(), 1, "{triggers:?}");
    let trigger = &triggers[0];
    assert_eq!(trigger["type"], "prometheus");
    assert_eq!(trigger["metricType"], "AverageValue");
    assert_eq!(parameter(&scaled, "query"), RULE);
    let rules = std::fs::read_to_string(root().join("deploy/monitoring/rules.yaml")).unwrap();
    assert!(
        rule_lines(&rules, "record:").iter().any(|r| r == RULE),
        "{RULE} is no recording rule of rules.yaml"
    );
    let tests = std::fs::read_to_string(root().join("deploy/monitoring/rules.test.yaml")).unwrap();
    let tested = rule_lines(&tests, "expr:");
    assert!(
        tested.iter().filter(|e| *e == RULE).count() >= 3,
        "rules.test.yaml does not test {RULE} (its sum, its floor, its absence)"
    );
    for key in trigger["metadata"].as_object().expect("metadata").keys() {
        assert!(
            PROMETHEUS_PARAMETERS.contains(&key.as_str()),
            "KEDA's prometheus scaler reads no parameter {key:?}"
        );
    }
    let server = parameter(&scaled, "serverAddress");
    let host = server
        .strip_prefix("http://")
        .or_else(|| server.strip_prefix("https://"))
        .expect("an http(s) serverAddress");
    assert!(
        host.split(['.', ':']).nth(1) == Some("monitoring"),
        "{server} is no Service of the namespace monitoring"
    );
    let threshold: f64 = parameter(&scaled, "threshold").parse().expect("a number");
    assert!(threshold > 0.0);
    // A running job counts at least 1 s: below that, any running job is activity.
    let activation: f64 = parameter(&scaled, "activationThreshold")
        .parse()
        .expect("a number");
    assert!((0.0..1.0).contains(&activation), "{activation}");
    assert_eq!(parameter(&scaled, "ignoreNullValues"), "false");
}

/// The overlay of docs/operations.md (a folder beside a clone of this repository) renders the
/// fleet without its replicas and the ScaledObject with it: the rest of the fleet as
/// `deploy/kubernetes` has it.
#[test]
fn the_documented_overlay_leaves_the_replicas_to_the_autoscaler() {
    let Some(tools) = tools() else { return };
    let section = common::doc_section("docs/operations.md", "## Scaling on the jobs' work");
    let overlay = section
        .split("```yaml\n")
        .nth(1)
        .and_then(|block| block.split("\n```").next())
        .expect("a yaml block in the section");
    let scratch = Scratch::new("autoscaling-overlay");
    std::os::unix::fs::symlink(root(), scratch.join("patience")).expect("link the clone");
    std::fs::create_dir(scratch.join("production")).unwrap();
    scratch.write("production/kustomization.yaml", overlay);
    let docs = rendered(tools, &scratch.join("production"));
    let fleet = rendered(tools, &root().join("deploy/kubernetes"));
    let mut deployment = one(&docs, "Deployment").clone();
    assert!(
        deployment["spec"].get("replicas").is_none(),
        "the overlay's Deployment keeps replicas: {}",
        deployment["spec"]
    );
    deployment["spec"]["replicas"] = one(&fleet, "Deployment")["spec"]["replicas"].clone();
    let mut expected = fleet.clone();
    expected.push(scaled_object(tools));
    let key = |d: &Value| format!("{} {}", d["kind"], d["metadata"]["name"]);
    let mut got: Vec<Value> = docs
        .iter()
        .map(|d| {
            if d["kind"] == "Deployment" {
                deployment.clone()
            } else {
                d.clone()
            }
        })
        .collect();
    got.sort_by_key(key);
    expected.sort_by_key(key);
    assert_eq!(got, expected, "the overlay changes more than the replicas");
}
