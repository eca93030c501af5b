// Validates Kubernetes manifests offline against the API's JSON schemas
// (the kubernetes-models package, pinned in package-lock.json): every
// document of every file must be a kind the schemas know, and valid. Prints
// a line per object; exits 1 naming each that is not.
//   node deploy/kubernetes/check/check.mjs deploy/kubernetes/*.yaml
import fs from "node:fs";
import YAML from "yaml";

let bad = 0;
const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: node check.mjs MANIFEST.yaml ...");
  process.exit(2);
}
for (const file of files) {
  const docs = YAML.parseAllDocuments(fs.readFileSync(file, "utf8"));
  for (const doc of docs) {
    if (doc.errors.length) {
      bad++;
      console.log(`FAIL: ${file}: not YAML: ${doc.errors[0].message}`);
      continue;
    }
    const obj = doc.toJS();
    if (obj === null || obj === undefined) continue;
    const what = `${file}: ${obj.apiVersion}/${obj.kind} ${obj.metadata?.name ?? "(no name)"}`;
    let Kind;
    try {
      Kind = (await import(`kubernetes-models/${obj.apiVersion}/${obj.kind}`))[obj.kind];
    } catch {
      bad++;
      console.log(`FAIL: ${what}: no schema for this apiVersion and kind`);
      continue;
    }
    try {
      new Kind(obj).validate();
      console.log(`ok: ${what}`);
    } catch (e) {
      bad++;
      console.log(`FAIL: ${what}: ${e.message}`);
    }
  }
}
process.exit(bad ? 1 : 0);
