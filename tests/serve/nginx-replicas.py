"""Two quill-serve replicas of one artifact behind nginx (Debian's package):
round robin with passive health checks. Requests through nginx reach both
replicas; one replica is killed mid-run and nginx fails over with no failed
request. The second replica reads its weights in place (--mmap), the
first from its copy in huge pages: both answer a greedy request alike."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import http.client

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def config(port, replicas, prefix):
    servers = "\n".join("    server 127.0.0.1:%d max_fails=1 fail_timeout=5s;" % r.port for r in replicas)
    return """worker_processes 1;
error_log %(prefix)s/error.log warn;
pid %(prefix)s/nginx.pid;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path %(prefix)s/body;
  proxy_temp_path %(prefix)s/proxy;
  fastcgi_temp_path %(prefix)s/fastcgi;
  uwsgi_temp_path %(prefix)s/uwsgi;
  scgi_temp_path %(prefix)s/scgi;
  upstream quill {
%(servers)s
  }
  server {
    listen 127.0.0.1:%(port)d;
    location / {
      proxy_pass http://quill;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      # Completions change nothing: one cut off by a dying replica may rerun.
      proxy_next_upstream error timeout http_502 http_503 non_idempotent;
      proxy_connect_timeout 2s;
    }
  }
}
""" % {"prefix": prefix, "servers": servers, "port": port}


def completion(port, i):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request("POST", "/v1/completions", json.dumps(
            {"prompt": "Story %d" % i, "max_tokens": 16, "seed": i}))
        r = conn.getresponse()
        body = r.read()
        return r.status, body
    finally:
        conn.close()


def main():
    if not os.path.exists(NGINX):
        harness.skip("nginx is not installed (scripts/setup.sh installs it)")
    artifact = harness.stories_artifact()
    replicas = [harness.Server(artifact), harness.Server(artifact, "--mmap")]
    greedy = {"prompt": "Once upon a time", "max_tokens": 24, "temperature": 0}
    texts = [r.json("POST", "/v1/completions", greedy) for r in replicas]
    if any(status != 200 for status, _ in texts) or \
            texts[0][1]["choices"][0]["text"] != texts[1][1]["choices"][0]["text"]:
        for r in replicas:
            r.stop()
        print("FAIL: the replicas (huge-page copy, --mmap) answer greedy requests differently: %s"
              % texts)
        return 1
    prefix = tempfile.mkdtemp(prefix="quill-nginx-")
    os.chmod(prefix, 0o755)
    port = free_port()
    with open(os.path.join(prefix, "nginx.conf"), "w") as f:
        f.write(config(port, replicas, prefix))
    nginx = subprocess.Popen([NGINX, "-p", prefix, "-c", os.path.join(prefix, "nginx.conf"),
                              "-g", "daemon off;"])
    failures = []
    try:
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                if completion(port, 0)[0] == 200:
                    break
            except OSError:
                time.sleep(0.1)
        for i in range(20):
            status, body = completion(port, i)
            if status != 200:
                failures.append("through nginx: %d %s" % (status, body[:200]))
        served = [r.metrics().get('quill_requests_total{status="200"}', 0) for r in replicas]
        print("requests served per replica: %s" % served)
        if min(served) < 5:
            failures.append("round robin did not reach both replicas: %s" % served)
        # Kill one replica while clients run; every request must still succeed.
        statuses = []
        stop = threading.Event()

        def client(k):
            i = 0
            while not stop.is_set():
                statuses.append(completion(port, 1000 * k + i)[0])
                i += 1
        threads = [threading.Thread(target=client, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        time.sleep(1.0)
        replicas[0].proc.send_signal(signal.SIGKILL)
        replicas[0].proc.wait()
        time.sleep(2.0)
        stop.set()
        for t in threads:
            t.join()
        print("during failover: %d requests, statuses %s" % (len(statuses), sorted(set(statuses))))
        if not statuses or any(s != 200 for s in statuses):
            failures.append("requests failed during failover: %s" %
                            {s: statuses.count(s) for s in set(statuses)})
        for i in range(10):
            status, _ = completion(port, 5000 + i)
            if status != 200:
                failures.append("after failover: %d" % status)
    finally:
        nginx.send_signal(signal.SIGQUIT)
        try:
            nginx.wait(timeout=10)
        except subprocess.TimeoutExpired:
            nginx.kill()
        for r in replicas:
            r.stop()
        if failures:
            with open(os.path.join(prefix, "error.log")) as f:
                print(f.read()[-3000:])
        shutil.rmtree(prefix, ignore_errors=True)
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
