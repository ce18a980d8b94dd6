"""examples/js: a JavaScript client with capnp-es straight over the sidecar's socket, run with
node against a real sidecar. scripts/setup.sh installs capnp-es (the example's lockfile) into
$FK_JS_EXAMPLE_DIR (default /var/cache/fencekeeper/js-example); the test is skipped only where
node or that install is missing."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

import fencekeeper

import fk_harness

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "js"
MODULES = Path(os.environ.get("FK_JS_EXAMPLE_DIR", "/var/cache/fencekeeper/js-example")) / \
    "node_modules"


@unittest.skipUnless(shutil.which("node") and (MODULES / "capnp-es").is_dir(),
                     "needs node and capnp-es in %s (scripts/setup.sh)" % MODULES)
class JsExampleTest(fk_harness.ClusterTestCase):

    def run_example(self, name):
        with tempfile.TemporaryDirectory(prefix="fk-js-") as work:
            # The example's files beside the installed modules (ESM resolves from the file).
            for item in ("lease.mjs", "socket_transport.mjs", "package.json", "gen"):
                source = EXAMPLE / item
                if source.is_dir():
                    shutil.copytree(source, Path(work) / item)
                else:
                    shutil.copy(source, work)
            os.symlink(MODULES, Path(work) / "node_modules")
            # node runs without the sanitizer runtime an ASan build preloads into Python.
            env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS")}
            done = subprocess.run(["node", "lease.mjs", "--socket", self.socket, "--name", name],
                                  cwd=work, env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        return [json.loads(line) for line in done.stdout.splitlines()]

    def test_acquire_renew_holder_release_from_javascript(self):
        steps = self.run_example("js/example")
        self.assertEqual([s["step"] for s in steps],
                         ["acquired", "renewed", "holder", "released"])
        acquired, renewed, holder, released = steps
        self.assertGreater(int(acquired["token"]), 0)
        self.assertGreater(acquired["validMs"], 0)
        self.assertGreater(renewed["validMs"], 0)
        self.assertEqual((holder["held"], holder["token"], holder["ownerLabel"]),
                         (True, acquired["token"], "js-example"))
        self.assertTrue(released["confirmed"])
        with fencekeeper.Client(self.socket) as client:
            self.assertFalse(client.holder("js/example").held)
            # Fenced like any other: the next holder's token is larger.
            with client.lock("js/example") as lease:
                self.assertGreater(lease.token, int(acquired["token"]))

    def test_the_committed_schema_code_is_the_schema_compiled_now(self):
        # gen/fencekeeper.js is committed: a schema change must regenerate it (npm run gen).
        ipc = EXAMPLE.parents[1] / "ipc"
        with tempfile.TemporaryDirectory(prefix="fk-js-gen-") as work:
            os.symlink(MODULES, Path(work) / "node_modules")  # the plugin resolves capnp-es here
            os.mkdir(Path(work) / "gen")
            subprocess.run(["capnp", "compile", "-I/usr/include",
                            "-o", "./node_modules/.bin/capnpc-js:gen", "--src-prefix=%s" % ipc,
                            str(ipc / "fencekeeper.capnp")],
                           cwd=work, check=True, capture_output=True, timeout=120)
            fresh = (Path(work) / "gen" / "fencekeeper.js").read_text()
        self.assertEqual(fresh, (EXAMPLE / "gen" / "fencekeeper.js").read_text(),
                         "examples/js/gen/fencekeeper.js is stale: cd examples/js && npm run gen")

if __name__ == "__main__":
    unittest.main()
