"""Starting and stopping quill-serve for the server's tests.

Paths come from the environment ctest sets (QUILL_SERVE, QUILL_COMPILE,
QUILL_SHARED, QUILL_WORK); a test exits 77 (ctest's skip) when the shared
models are absent.
"""
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import time

SKIP = 77


def shared(relative):
    return os.path.join(os.environ.get("QUILL_SHARED", "../shared"), relative)


def skip(reason):
    print("SKIPPED: " + reason)
    sys.exit(SKIP)


def stories_artifact():
    """stories260K compiled into QUILL_WORK (batch rows 64), again whenever
    quill-compile is newer than the artifact (a format change)."""
    model = shared("models/stories260K/stories260K.bin")
    if not os.path.exists(model):
        skip("../shared/models/stories260K is absent")
    work = os.environ.get("QUILL_WORK", "/tmp/quill-serve-tests")
    os.makedirs(work, exist_ok=True)
    out = os.path.join(work, "stories.qm")
    if (not os.path.exists(out) or
            os.path.getmtime(out) < os.path.getmtime(os.environ["QUILL_COMPILE"])):
        tmp = out + ".tmp%d" % os.getpid()
        subprocess.run([os.environ["QUILL_COMPILE"], model, "--tokenizer",
                        shared("models/stories260K/tok512.bin"), "-o", tmp], check=True)
        os.replace(tmp, out)
    return out


def chat_template():
    return shared("templates/meta-llama-Llama-3.1-8B-Instruct.jinja")


class Server:
    """quill-serve ARTIFACT --port 0 FLAGS..., up and ready."""

    def __init__(self, artifact, *flags, ready_timeout=60):
        self.proc = subprocess.Popen([os.environ["QUILL_SERVE"], artifact, "--port", "0", *flags],
                                     stderr=subprocess.PIPE, text=True)
        line = self.proc.stderr.readline()
        m = re.search(r"listening on http://([^:]+):(\d+)", line)
        if not m:
            self.proc.kill()
            raise RuntimeError("quill-serve did not start: " + line + self.proc.stderr.read())
        self.host, self.port = m.group(1), int(m.group(2))
        self.url = "http://%s:%d" % (self.host, self.port)
        deadline = time.time() + ready_timeout
        while time.time() < deadline:
            try:
                if self.request("GET", "/health")[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.05)
        else:
            self.stop()
            raise RuntimeError("quill-serve was not ready within %ds" % ready_timeout)
        # Drain stderr so that the server never blocks on a full pipe.
        import threading
        self.log = []
        threading.Thread(target=lambda: self.log.extend(self.proc.stderr), daemon=True).start()

    def request(self, method, path, body=None, headers=None, timeout=60):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            if isinstance(body, (dict, list)):
                body = json.dumps(body)
            conn.request(method, path, body=body, headers=headers or {})
            r = conn.getresponse()
            return r.status, r.read(), dict(r.getheaders())
        finally:
            conn.close()

    def json(self, method, path, body=None, headers=None):
        status, data, _ = self.request(method, path, body, headers)
        return status, json.loads(data)

    def metrics(self, headers=None):
        status, data, _ = self.request("GET", "/metrics", headers=headers)
        assert status == 200, status
        values = {}
        for line in data.decode().splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                values[name] = float(value)
        return values

    def wait_idle(self, timeout=10):
        """Waits for no sequence running and no KV block in use."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            m = self.metrics()
            if m["quill_kv_blocks_used"] == 0 and m["quill_sequences_running"] == 0:
                return m
            time.sleep(0.05)
        raise AssertionError("still busy after %ds: %s" % (timeout, self.metrics()))

    def rss_mb(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
        return 0.0

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                return self.proc.wait()
        return self.proc.returncode


def run_with_server(argv):
    """with_server: starts a server, runs argv with QUILL_SERVER_URL and
    QUILL_API_KEY set, stops the server; exits with argv's status."""
    if os.path.basename(argv[0]) == "node" and not os.path.isdir(
            os.path.join(os.path.dirname(os.path.abspath(__file__)), "node_modules")):
        skip("tests/serve/node_modules is absent (scripts/setup.sh runs npm ci there)")
    artifact = stories_artifact()
    key = "test-key-123"
    server = Server(artifact, "--api-key", key, "--chat-template", chat_template())
    try:
        env = dict(os.environ, QUILL_SERVER_URL=server.url, QUILL_API_KEY=key)
        code = subprocess.run(argv, env=env).returncode
    finally:
        stopped = server.stop()
    if code == 0 and stopped != 0:
        print("quill-serve exited %d after SIGTERM" % stopped)
        code = 1
    return code


if __name__ == "__main__":
    sys.exit(run_with_server(sys.argv[1:]))
