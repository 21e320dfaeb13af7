#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""make-sign-seeds.py — write the seeds of fuzz_sign that its test key
signed (tests/fuzz/corpus/sign/signed-*.json): a desired and a shadow
document for h1, a policy, a rollout, a counter, a timestamp and a record document
of the fleet "default", each in the
envelope of agent/lib/fleet/sign.h, signed with the key pair of the fixed
seed FUZZ_SEED of tests/fuzz/fuzz_sign.c (python3-cryptography's Ed25519,
the same signatures as libsodium's).  Run it from the repository root when
the envelope or a document changes; its output is committed."""
import base64
import hashlib
import json
import os

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

SEED = b"nodetune fuzz_sign fixed seed!!!"
OUT = "tests/fuzz/corpus/sign"

key = Ed25519PrivateKey.from_private_bytes(SEED)
pk = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
KEY_ID = hashlib.sha256(pk).hexdigest()[:16]


def compact(o):
    return json.dumps(o, separators=(",", ":"))


FLEET = "default"
EXPIRES = 4102444800      # 2100-01-01: the seeds stay valid (fuzz_sign checks no clock anyway)


def envelope(kind, host, rollout, seq, sha, doc, expires=EXPIRES):
    doc = doc.encode()
    canon = (f"nodetune-signed-v2\nkind {kind}\nfleet {FLEET}\nhost {host}\nrollout {rollout}\nseq {seq}\n"
             f"expires {expires}\npolicy-sha256 {sha}\nlength {len(doc)}\n\n").encode() + doc
    return compact({"nodetune_signed": 2, "kind": kind, "fleet": FLEET, "host": host, "rollout": rollout,
                    "seq": seq, "expires": expires, "policy_sha256": sha, "key_id": KEY_ID,
                    "sig": base64.b64encode(key.sign(canon)).decode(), "doc": base64.b64encode(doc).decode()})


policy = b"[main]\nsummary = fuzz\n[thp]\nenabled = madvise\n"
SHA = hashlib.sha256(policy).hexdigest()
host = {"host": "h1", "class": "0123456789ab", "label": "2s-2n-48c-8gpu-T4", "state": "sent", "prev_rev": 7,
        "prev_desired": None, "verdict": None, "ratio": None}
rollout = {"name": "r1", "policy": "p.conf", "sha256": SHA, "state": "running", "waves_spec": "100%", "gate": "",
           "gate_budget": 0.0, "wave_timeout": 600.0, "shadow": False, "allow_inconclusive": False,
           "goal": "rolled-back", "wave": 0,
           "waves": [{"index": 0, "spec": "100%", "state": "applying", "started": 1.5, "hosts": [host]}],
           "events": [{"t": 1.0, "what": "created: p.conf"}], "created": 1.0, "updated": 1.5,
           "phase_started": 1.5, "reason": None}
seeds = {
    "signed-desired": envelope("desired", "h1", "r1", 5, SHA,
                               compact({"rollout": "r1", "mode": "apply", "policy": "p.conf", "sha256": SHA})),
    "signed-shadow": envelope("shadow", "h1", "r1", 5, SHA, compact({"rollout": "r1", "policy": "p.conf", "sha256": SHA})),
    "signed-policy": envelope("policy", "*", "r1", 4, SHA,
                              json.dumps({"content": base64.b64encode(policy).decode(), "name": "p.conf", "sha256": SHA},
                                         separators=(",", ":"), sort_keys=True)),
    "signed-rollout": envelope("rollout", "*", "r1", 6, SHA, compact(rollout), 0),
    "signed-counter": envelope("counter", "*", "none", 7, "0" * 64, compact({"seq": 7, "time": 1.5}), 0),
    "signed-timestamp": envelope("timestamp", "*", "none", 8, "0" * 64, compact({"seq": 8, "time": 2.5})),
    "signed-record": envelope("record", "*", "r1", 9, SHA,
                              compact({"rollout": "r1", "mode": "apply", "policy": "p.conf", "sha256": SHA}), 0),
}
for name, text in seeds.items():
    with open(os.path.join(OUT, name + ".json"), "w") as f:
        f.write(text)
print(f"key {KEY_ID}: wrote {', '.join(sorted(seeds))} to {OUT}")
