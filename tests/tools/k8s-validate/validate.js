// validate.js — check Kubernetes objects against the API's OpenAPI schemas.
//
// Reads a JSON array of objects on stdin (test_deploy.sh turns the YAML
// into JSON with python3-yaml), finds each one's model in kubernetes-models
// by apiVersion and kind, and validates it (ajv over the schemas generated
// from the Kubernetes OpenAPI spec: types, required fields, enums, formats,
// unknown fields).  Prints "ok KIND/NAME" or "invalid KIND/NAME: why" per
// object; exits 0 when all are valid, 1 when one is not, 2 when an object's
// apiVersion/kind has no model.
"use strict";

const path = require("path");

function modelOf(obj) {
	const [group, version] = obj.apiVersion.includes("/")
		? obj.apiVersion.split("/") : ["", obj.apiVersion];
	const dir = group ? `${group}/${version}` : version;
	const mod = require(path.join("kubernetes-models", dir, obj.kind));
	return mod[obj.kind];
}

let input = "";
process.stdin.on("data", (d) => { input += d; });
process.stdin.on("end", () => {
	let rc = 0;
	for (const obj of JSON.parse(input)) {
		const what = `${obj.kind}/${obj.metadata && obj.metadata.name}`;
		let Model;
		try {
			Model = modelOf(obj);
		} catch (e) {
			console.log(`unknown ${what}: no model for ${obj.apiVersion} ${obj.kind}`);
			rc = 2;
			continue;
		}
		try {
			new Model(obj).validate();
			console.log(`ok ${what}`);
		} catch (e) {
			console.log(`invalid ${what}: ${e.message.replace(/\n/g, " ")}`);
			if (rc === 0) rc = 1;
		}
	}
	process.exit(rc);
});
