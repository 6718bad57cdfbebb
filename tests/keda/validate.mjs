// KEDA's schema for what `kubectl kustomize` renders (tests/autoscaling.rs):
//
//   kubectl kustomize deploy/kubernetes/autoscaling | node tests/keda/validate.mjs MODULES
//
// MODULES is the node_modules of this folder's package.json, installed by `npm ci` from its
// package-lock.json (.ci/run installs it in target/tools/keda). Reads YAML documents on standard
// input and checks every keda.sh ScaledObject against the validators of @kubernetes-models/keda,
// generated from KEDA's API types (github.com/kedacore/keda/v2, apis/keda/v1alpha1): the types,
// the required fields, the Kubernetes types it embeds (the HPA's behavior). Those validators let
// a field they do not know through, where the API server refuses it (kubectl's strict field
// validation) or drops it (a misspelt field then silently does nothing), so each field is also
// checked to be one the schema knows: given a value of no type at all, a known field is refused
// at its own path, and an unknown one is never looked at. Prints the documents as one JSON array
// and exits 0; or says what is wrong with which ScaledObject, on standard error, and exits 1.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const modules = process.argv[2];
if (!modules) {
  console.error("usage: node tests/keda/validate.mjs NODE_MODULES < documents.yaml");
  process.exit(2);
}
// By file, not by name: the modules are not beside this script.
const load = (path) => import(pathToFileURL(join(modules, path)).href);
const yaml = await load("yaml/dist/index.js");
const { ScaledObject } = await load("@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject.js");
const parseAllDocuments = yaml.parseAllDocuments ?? yaml.default.parseAllDocuments;

/** The schema's complaints about `doc`, as "PATH message" (an empty list when it passes). */
function refusals(doc) {
  try {
    new ScaledObject(doc).validate();
    return [];
  } catch (error) {
    if (!Array.isArray(error.errors)) throw error;
    return error.errors.map((e) => ({ path: e.instancePath, message: e.message }));
  }
}

/** A JSON pointer's token (RFC 6901). */
const token = (key) => String(key).replaceAll("~", "~0").replaceAll("/", "~1");

/** The fields of `doc` (not array items) the schema does not know, outermost only. */
function unknownFields(doc) {
  const unknown = [];
  const visit = (value, steps) => {
    if (Array.isArray(value)) {
      value.forEach((item, i) => visit(item, [...steps, i]));
      return;
    }
    if (value === null || typeof value !== "object") return;
    for (const key of Object.keys(value)) {
      const path = [...steps, key];
      const pointer = path.map((s) => "/" + token(s)).join("");
      const probe = structuredClone(doc);
      let parent = probe;
      for (const step of steps) parent = parent[step];
      parent[key] = Symbol("no type");
      if (refusals(probe).some((r) => r.path === pointer)) {
        visit(value[key], path);
      } else {
        unknown.push(pointer);
      }
    }
  };
  visit(doc, []);
  return unknown;
}

const text = readFileSync(0, "utf8");
const documents = parseAllDocuments(text);
const docs = [];
for (const document of Array.isArray(documents) ? documents : [documents]) {
  if (document.errors.length > 0) {
    console.error(`not YAML: ${document.errors.map((e) => e.message).join("; ")}`);
    process.exit(1);
  }
  const doc = document.toJS();
  if (doc !== null && doc !== undefined) docs.push(doc);
}

const faults = [];
for (const doc of docs) {
  const group = String(doc.apiVersion ?? "").split("/")[0];
  if (group !== "keda.sh") continue;
  const name = `${doc.kind} ${doc.metadata?.name ?? "(no name)"}`;
  if (doc.kind !== "ScaledObject" || doc.apiVersion !== ScaledObject.apiVersion) {
    faults.push(`${name} (${doc.apiVersion}): no schema checked here; only ${ScaledObject.apiVersion} ScaledObject`);
    continue;
  }
  for (const r of refusals(doc)) faults.push(`${name}: ${r.path || "/"} ${r.message}`);
  for (const path of unknownFields(doc)) {
    faults.push(`${name}: ${path} is no field of KEDA's ScaledObject`);
  }
}
if (faults.length > 0) {
  console.error(faults.join("\n"));
  process.exit(1);
}
console.log(JSON.stringify(docs));
