// Validates Kubernetes objects against the Kubernetes API's schemas, offline.
//   node validate_manifests.mjs < objects.json      (a JSON array of objects)
// Built-in kinds go through the kubernetes-models package (npm; its validators are compiled
// from the Kubernetes OpenAPI document with ajv); a PyTorchJob through ajv with the schema
// vendored from Kubeflow's training-operator (../schemas), whose Kubernetes types (the pod
// templates) again resolve to kubernetes-models. An object of any other apiVersion/kind is an
// error, never passed unchecked. Prints one line per object; exits 1 when any fails.
// Neither package rejects unknown fields: the Kubernetes schemas do not forbid them.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const npmRoot = process.env.EROICA_NPM_ROOT || execFileSync("npm", ["root", "-g"], { encoding: "utf8" }).trim();
const models = join(npmRoot, "kubernetes-models");
// npm may nest kubernetes-models' own dependency or hoist it.
const apimachinery = [join(models, "node_modules/@kubernetes-models/apimachinery"),
                      join(npmRoot, "@kubernetes-models/apimachinery")].find(existsSync);
const importFile = (path) => import(pathToFileURL(path).href);

// Where each kind's model lives: "v1" is the core group.
async function modelFor(apiVersion, kind) {
  if (!/^[a-z0-9.]+(\/[a-z0-9]+)?$/.test(apiVersion) || !/^[A-Z][A-Za-z0-9]*$/.test(kind)) return null;
  const file = join(models, apiVersion, `${kind}.js`);  // one model, not the group's whole index
  if (!existsSync(file)) return null;
  const Model = (await importFile(file))[kind];
  return typeof Model === "function" && Model.apiVersion === apiVersion && Model.kind === kind ? Model : null;
}

// The Kubernetes types the vendored CRD schema refers to, by their name in that schema.
const kubernetesTypes = {
  "v1.ObjectMeta": join(apimachinery, "_schemas/IoK8sApimachineryPkgApisMetaV1ObjectMeta.js"),
  "v1.PodTemplateSpec": join(models, "_schemas/IoK8sApiCoreV1PodTemplateSpec.js"),
  "v1.LabelSelector": join(apimachinery, "_schemas/IoK8sApimachineryPkgApisMetaV1LabelSelector.js"),
  "v1.Time": join(apimachinery, "_schemas/IoK8sApimachineryPkgApisMetaV1Time.js"),
  ".Quantity": join(apimachinery, "_schemas/IoK8sApimachineryPkgApiResourceQuantity.js"),
  // autoscaling/v2beta2 is gone from Kubernetes; v2 has the same MetricSpec.
  "k8s.io.api.autoscaling.v2beta2.MetricSpec": join(models, "_schemas/IoK8sApiAutoscalingV2MetricSpec.js"),
};

async function crdValidator(schemaFile) {
  const Ajv = createRequire(join(npmRoot, "ajv") + "/")("ajv").default;
  const ajv = new Ajv({ allErrors: true, formats: { int32: true, int64: true } });
  const compiled = {};
  for (const [name, path] of Object.entries(kubernetesTypes)) compiled[name] = (await importFile(path)).validate;
  ajv.addKeyword({
    keyword: "x-kubernetes-type",
    errors: true,
    validate: function check(name, data, _schema, context) {
      const ok = compiled[name](data);
      if (!ok) {
        check.errors = compiled[name].errors.map((e) => ({ ...e, instancePath: context.instancePath + e.instancePath }));
      }
      return ok;
    },
  });
  const schema = JSON.parse(readFileSync(schemaFile, "utf8"));
  for (const name of Object.keys(kubernetesTypes)) schema.definitions[name] = { "x-kubernetes-type": name };
  return ajv.compile(schema);
}

const here = dirname(fileURLToPath(import.meta.url));
const crds = { "kubeflow.org/v1 PyTorchJob": join(here, "../schemas/kubeflow.org_v1_pytorchjob.json") };

const objects = JSON.parse(readFileSync(0, "utf8"));
let failed = 0;
for (const object of objects) {
  const what = `${object.apiVersion} ${object.kind}`;
  const name = `${what} ${object.metadata?.name ?? "(no name)"}`;
  let errors = null;
  if (crds[what]) {
    const validate = await crdValidator(crds[what]);
    if (!validate(object)) errors = validate.errors.map((e) => `${e.instancePath || "/"} ${e.message ?? `${e.keyword} ${JSON.stringify(e.params)}`}`).join("; ");
  } else {
    const Model = await modelFor(object.apiVersion, object.kind);
    if (!Model) {
      errors = "no schema for this apiVersion and kind";
    } else {
      try {
        new Model(object).validate();
      } catch (error) {
        errors = error.message;
      }
    }
  }
  if (errors) failed++;
  console.log(errors ? `FAIL ${name}: ${errors}` : `ok ${name}`);
}
process.exit(failed ? 1 : 0);
