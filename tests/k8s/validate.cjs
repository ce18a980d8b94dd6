// Validates Kubernetes objects (a JSON array on stdin) against the API schema of the npm package
// kubernetes-models, and refuses fields the schema does not know: its validators accept unknown
// fields, so every key of the objects is watched and one the validator never read is an error.
//   usage: node validate.cjs VALIDATOR_DIR < objects.json     (exit 0: all valid)
"use strict";
const path = require("path");
const dir = process.argv[2];
const load = (name) => require(require.resolve(name, { paths: [dir] }));

// A view of `value` that records, per object path, the keys the validator reads.
function watched(value, where, read) {
  if (value === null || typeof value !== "object") return value;
  const keys = read.get(where) || new Set();
  read.set(where, keys);
  return new Proxy(value, {
    get(target, key) {
      if (typeof key !== "string") return target[key];
      keys.add(key);
      return watched(target[key], `${where}/${key}`, read);
    },
  });
}

// Keys of plain objects under `value` that were never read: fields the schema does not have.
function unread(value, where, read, out) {
  if (value === null || typeof value !== "object") return out;
  const keys = read.get(where);
  for (const key of Object.keys(value)) {
    if (!Array.isArray(value) && !(keys && keys.has(key))) {
      out.push(`${where}/${key}`);
    } else {
      unread(value[key], `${where}/${key}`, read, out);
    }
  }
  return out;
}

const objects = JSON.parse(require("fs").readFileSync(0, "utf8"));
let failures = 0;
for (const object of objects) {
  const id = `${object.kind} ${object.metadata && object.metadata.name}`;
  let Model;
  try {
    Model = load(`kubernetes-models/${object.apiVersion}`)[object.kind];
  } catch (e) {
    Model = undefined;
  }
  if (!Model) {
    console.log(`FAIL ${id}: no schema for apiVersion ${object.apiVersion} kind ${object.kind}`);
    failures++;
    continue;
  }
  const read = new Map();
  try {
    Model.prototype.validate.call(watched(object, "", read));
  } catch (e) {
    console.log(`FAIL ${id}: ${e.message}`);
    failures++;
    continue;
  }
  const unknown = unread(object, "", read, []);
  if (unknown.length) {
    console.log(`FAIL ${id}: fields the schema does not have: ${unknown.join(", ")}`);
    failures++;
    continue;
  }
  console.log(`ok ${id} (${object.apiVersion})`);
}
const version = load("kubernetes-models/package.json").version;
console.log(`${objects.length - failures} valid, ${failures} invalid (kubernetes-models ${version}` +
            ` in ${path.resolve(dir)})`);
process.exit(failures ? 1 : 0);
