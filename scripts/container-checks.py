#!/usr/bin/env python3
"""The checks of scripts/container-test, run against the image it built (python3 stdlib + PyYAML).

Usage: container-checks.py IMAGE RUNTIME_BASE STATE_DIR

Every container is started with podman from what deploy/compose.sqlite.yaml (one SQLite
instance) and deploy/compose.yaml (instances on PostgreSQL) say: read-only root, tmpfs /tmp, no
capabilities, no new privileges, the image's own user, the data volume, the port on 127.0.0.1.
What is checked, in order (each step prints one line):
  image       user, HEALTHCHECK and entrypoint in the config; no compiler, no build tree, no
              secrets; the packages the Dockerfile adds over its base and the binary's size
  (start)     the server starts locked: the token comes from the Compose secret (a read-only
              bind mount of a file owned by uid 10001, mode 0400, at /run/secrets/...), as
              deploy/compose.sqlite.yaml says
  hardening   non-root, no capabilities, NoNewPrivs; only /data and /tmp writable
  serving     every kind of route, covers from a local upstream (cached in /data)
  token       locked from the start by BLUELIBRARY_TOKEN_FILE; `podman inspect` shows no token
  health      healthy once ready; unhealthy while wedged (SIGSTOP), healthy again; healthy with
              `serve --port N`
  proxy       host nginx with deploy/nginx.conf.example: client address, scheme (TLS at nginx)
              and host come through; SSE unbuffered; a large PUT /archive streams
  drain       `podman stop` while a request is in flight: unhealthy while draining, the request
              is answered, exit code 0
  volume      `podman rm` and a new container on the volume: albums, undo, settings, token lock,
              the cover cache is still there
  backup      as docs/backup-and-upgrade.md says, in the hardened container: a backup
              out through `podman exec ... backup --to -` and through `podman cp`; the 0600 copy
              on a read-only mount refused with a message that says what to do; restored
              through `podman run -i ... restore --from -`; the server serves the backup again
  postgres    two containers on one PostgreSQL database, as deploy/compose.yaml says: the
              password (with @ / :) and the token from secret files, the database demanding the
              password; each sees the other's writes and events, a token set through one holds
              on the other, both stop with exit code 0
Containers, volumes, networks, nginx, the cover upstream and PostgreSQL are removed at the end.
"""
import atexit, http.client, http.server, json, os, re, shutil, socket, ssl, subprocess, sys, tempfile, threading, time
import yaml

IMAGE, RUNTIME_BASE, STATE = sys.argv[1], sys.argv[2], sys.argv[3]
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
ROOT = [] if os.geteuid() == 0 else ["sudo"]
RUN_ID = f"ct{os.getpid()}"
TOKEN = "container-test-token-7f3a9c"
DB_PASSWORD = "ct-p@ss/w:rd%2F"
NEW_TOKEN = "container-test-token-second-1b2c"
cleanups = []
atexit.register(lambda: [f() for f in reversed(cleanups)])


def log(message):
    print(f"[container-test] {message}", file=sys.stderr, flush=True)


def fail(message):
    log(f"FAILED: {message}")
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


def eventually(predicate, timeout=60.0, what="condition"):
    """Polls predicate until it returns something true; fails after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            fail(f"timed out waiting for {what}")
        time.sleep(0.2)


def podman(*args, check_status=True, input=None, binary=False):
    """Runs podman; text in and out, or bytes with binary (a backup on stdin or stdout)."""
    run = subprocess.run(ROOT + ["podman", *args], input=input, capture_output=True, text=not binary)
    if check_status and run.returncode != 0:
        fail(f"podman {' '.join(args)}: exit {run.returncode}: {run.stderr if binary else run.stderr.strip()}")
    return run


def request(method, url, body=None, headers=None, timeout=30, context=None, token=TOKEN):
    """One request on a fresh connection: (status, headers as a lower-case dict, body bytes).
    It carries the token (every server here is locked from its start) unless token is None."""
    m = re.match(r"(https?)://([^/:]+):(\d+)(/.*)", url)
    scheme, host, port, path = m.group(1), m.group(2), int(m.group(3)), m.group(4)
    if scheme == "https":
        connection = http.client.HTTPSConnection(host, port, timeout=timeout, context=context or insecure_tls())
    else:
        connection = http.client.HTTPConnection(host, port, timeout=timeout)
    data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
    all_headers = {"Content-Type": "application/json"} if isinstance(body, (dict, list)) else {}
    if token:
        all_headers["Authorization"] = f"Bearer {token}"
    all_headers.update(headers or {})
    connection.request(method, path, body=data, headers=all_headers)
    response = connection.getresponse()
    payload = response.read()
    connection.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, payload


def insecure_tls():
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---- what the compose files say -------------------------------------------------------------

def compose(name):
    with open(os.path.join(REPO, "deploy", name)) as f:
        return yaml.safe_load(f)


SECRETS = os.path.join(STATE, f"secrets-{RUN_ID}")


def secret_file(name, content):
    """A secret as docs/container.md tells to make one: a file of its own, owned by the image's user
    (uid 10001), mode 0400, its content followed by a newline (which the server drops)."""
    os.makedirs(SECRETS, exist_ok=True)
    path = os.path.join(SECRETS, name)
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o400), "w") as f:
        f.write(content + "\n")
    os.chown(path, 10001, 10001)
    return path


def secret_flags(service, files):
    """Compose mounts a service's secrets (without Swarm) as read-only bind mounts of their
    files at /run/secrets/NAME: the same with podman. files maps secret names to host files."""
    flags = []
    for secret in service.get("secrets", []):
        name = secret if isinstance(secret, str) else secret["source"]
        check(name in files, f"a file for the secret {name}")
        flags += ["-v", f"{files[name]}:/run/secrets/{name}:ro"]
    return flags


def run_flags(service, publish_ports=True):
    """The podman run flags for a compose service's hardening, environment, volumes and ports."""
    flags = []
    if service.get("read_only"):
        # podman adds tmpfs /run, /var/tmp and /tmp to --read-only by default; Docker adds none.
        flags += ["--read-only", "--read-only-tmpfs=false"]
    for mount in service.get("tmpfs", []):
        flags += ["--tmpfs", mount]
    for capability in service.get("cap_drop", []):
        flags += ["--cap-drop", capability]
    for option in service.get("security_opt", []):
        flags += ["--security-opt", option]
    if "stop_grace_period" in service:
        flags += ["--stop-timeout", str(int(service["stop_grace_period"].rstrip("s")))]
    if publish_ports:
        for port in service.get("ports", []):
            check(port.startswith("127.0.0.1:"), f"compose publishes {port} beyond 127.0.0.1")
    return flags


SINGLE = compose("compose.sqlite.yaml")
SERVICE = SINGLE["services"]["bluelibrary"]
SUBNET = SINGLE["networks"]["library"]["ipam"]["config"][0]["subnet"]
GATEWAY = SINGLE["networks"]["library"]["ipam"]["config"][0]["gateway"]
check(SERVICE["environment"]["BLUELIBRARY_TRUSTED_PROXIES"] == f"{GATEWAY}/32", "the single compose file trusts its gateway")
HARDENING = run_flags(SERVICE)
NETWORK = f"bluelibrary-{RUN_ID}"
cleanups.append(lambda: shutil.rmtree(SECRETS, ignore_errors=True))
TOKEN_FILE = secret_file("bluelibrary_token", TOKEN)
check(SERVICE["environment"].get("BLUELIBRARY_TOKEN_FILE") == "/run/secrets/bluelibrary_token", "the single compose file starts with a token")


def start(name, volume, environment=None, arguments=(), publish=True, network=NETWORK, extra=(), service=None, secrets=None):
    """Starts a hardened container on the test network; returns its published host port."""
    service = service or SERVICE
    env = dict(service.get("environment", {}))
    env.update(environment or {})
    port = free_port() if publish else None
    flags = ["run", "-d", "--name", name, "--network", network, "-v", f"{volume}:/data"] + HARDENING + list(extra)
    flags += secret_flags(service, secrets or {"bluelibrary_token": TOKEN_FILE})
    for key, value in env.items():
        flags += ["-e", f"{key}={value}"]
    if publish:
        flags += ["-p", f"127.0.0.1:{port}:8080"]
    cleanups.append(lambda: podman("rm", "-f", "-t", "0", name, check_status=False))
    podman(*flags, IMAGE, *arguments)
    return port


def logs(name):
    run = podman("logs", name, check_status=False)
    return run.stdout + run.stderr


def health_run(name):
    """Runs the image's HEALTHCHECK command once; its exit code (0 healthy, 1 not)."""
    return podman("healthcheck", "run", name, check_status=False).returncode


def health(name):
    """Runs the image's HEALTHCHECK once (podman schedules it with systemd timers, which these
    machines do not run) and returns the container's health status afterwards."""
    podman("healthcheck", "run", name, check_status=False)
    return podman("inspect", "--format", "{{.State.Health.Status}}", name).stdout.strip()


def wait_ready(name, port):
    eventually(lambda: ready(port), 60, f"{name} to answer /readyz")
    eventually(lambda: health(name) == "healthy", 60, f"{name} to be healthy")


def ready(port):
    try:
        return request("GET", f"http://127.0.0.1:{port}/readyz", timeout=3)[0] == 200
    except OSError:
        return False


# ---- a cover server on the host -------------------------------------------------------------

def png(width=2, height=2):
    import struct, zlib
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
    raw = b"".join(b"\x00" + bytes([200, 30, 30]) * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


COVER = png(4, 4)


class Upstream:
    """Serves /cover-*.png; /held-*.png waits until release() (for the drain check)."""
    def __init__(self):
        self.hits = {}
        self.lock = threading.Lock()
        self.released = threading.Event()
        upstream = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                with upstream.lock:
                    upstream.hits[self.path] = upstream.hits.get(self.path, 0) + 1
                if self.path.startswith("/held-"):
                    upstream.released.wait(120)
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.send_header("Content-Length", str(len(COVER)))
                self.end_headers()
                self.wfile.write(COVER)

            def log_message(self, *args):
                pass

        # On the gateway address: the containers reach the host there, nothing else does.
        self.server = http.server.ThreadingHTTPServer((GATEWAY, 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        cleanups.append(self.server.shutdown)

    def url(self, name):
        return f"http://{GATEWAY}:{self.port}/{name}"

    def count(self, name):
        with self.lock:
            return self.hits.get("/" + name, 0)


# ---- the steps ------------------------------------------------------------------------------

def step_image():
    inspected = json.loads(podman("image", "inspect", IMAGE).stdout)[0]
    config = inspected["Config"]
    check(config.get("User") == "bluelibrary", f"image user is {config.get('User')!r}, not bluelibrary")
    healthcheck = inspected.get("Healthcheck") or config.get("Healthcheck") or {}
    check(healthcheck.get("Test") == ["CMD", "bluelibrary", "healthcheck"], f"HEALTHCHECK kept (docker format): {healthcheck}")
    check(config.get("Entrypoint") == ["bluelibrary"], f"entrypoint {config.get('Entrypoint')}")
    for variable in config.get("Env", []):
        check(not re.search(r"(TOKEN|PASSWORD|SECRET|DATABASE_URL)=", variable), f"a secret in the image's environment: {variable}")
    # Looked at from inside (as root, with a shell as entrypoint; the image has no Swift or compiler).
    probe = podman("run", "--rm", "--network", "none", "--user", "0", "--entrypoint", "/bin/sh", IMAGE, "-c", r"""
        for tool in swift swiftc swift-build clang gcc cc c++ ld ld.lld as make git; do command -v $tool; done
        for dir in /src /out /opt/swift /root/.swiftpm /data/.build; do [ -e $dir ] && echo "$dir"; done
        find / -xdev \( -name '*.swiftmodule' -o -name '*.swiftdoc' -o -name Package.swift -o -name '.git' -o -name '*.o' \
            -o -name '.build' -o -name id_rsa -o -name id_ed25519 -o -name '.netrc' -o -name '*.pem' -path '*private*' \) -print 2>/dev/null
        grep -rlE '^-----BEGIN ([A-Z]+ )?PRIVATE KEY-----$' /etc /usr/local /data /root /home 2>/dev/null
        ls -A /data""").stdout.split()
    check(probe == [], f"the image holds build tools, build files or secrets: {probe}")
    added = podman("run", "--rm", "--network", "none", "--entrypoint", "/usr/bin/dpkg-query", IMAGE,
                   "-W", "-f", "${Installed-Size}\t${Package}\n").stdout
    base = podman("run", "--rm", "--network", "none", "--entrypoint", "/usr/bin/dpkg-query", RUNTIME_BASE,
                  "-W", "-f", "${Installed-Size}\t${Package}\n").stdout
    base_packages = {line.split("\t")[1] for line in base.splitlines()}
    extra = sorted(((int(size), name) for size, name in (line.split("\t") for line in added.splitlines()) if name not in base_packages), reverse=True)
    linked = podman("run", "--rm", "--network", "none", "--entrypoint", "/usr/bin/ldd", IMAGE, "/usr/local/bin/bluelibrary").stdout
    check("not found" not in linked and "libvips.so.42 => /usr/local/lib/" in linked, f"the binary's libraries in the image:\n{linked}")
    binary = podman("run", "--rm", "--network", "none", "--entrypoint", "/usr/bin/stat", IMAGE, "-c", "%s", "/usr/local/bin/bluelibrary").stdout.strip()
    bundle = podman("run", "--rm", "--network", "none", "--entrypoint", "/usr/bin/du", IMAGE, "-sk", "/usr/local/bin/BlueLibrary_BlueLibraryServer.resources").stdout.split()[0]
    log(f"image: the binary {int(binary) / 2**20:.1f} MiB (stripped, static Swift runtime; ICU data is 33 MiB of it), "
        f"resources {int(bundle) / 1024:.1f} MiB, {len(extra)} Debian packages over the base, "
        f"{sum(size for size, _ in extra) / 1024:.1f} MiB installed, largest: "
        + ", ".join(f"{name} {size / 1024:.1f}" for size, name in extra[:8]))
    # What the Dockerfile may add over its base (BLUELIBRARY_IMAGE_BUDGET_MIB). The binary is most
    # of it: a static Swift runtime with Foundation's ICU data (33 MiB), which no build setting
    # removes; then the shared libraries it links (libcurl, libpq, libssl and theirs) and the
    # Dockerfile's own libvips (Debian's libvips42 alone would add 156 MB).
    sizes = [int(podman("image", "inspect", "--format", "{{.Size}}", image).stdout) for image in (IMAGE, RUNTIME_BASE)]
    budget = int(os.environ.get("BLUELIBRARY_IMAGE_BUDGET_MIB", "120"))
    check(sizes[0] - sizes[1] <= budget * 2**20,
          f"the image adds {(sizes[0] - sizes[1]) / 2**20:.1f} MiB over its base, more than {budget} MiB (packages above)")


def step_hardening(name):
    status = podman("exec", name, "sh", "-c", "id -u; grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs):' /proc/1/status").stdout.split()
    check(status[0] == "10001", f"runs as uid {status[0]}, not the image's 10001")
    fields = dict(zip(status[1::2], status[2::2]))
    for capability in ("CapEff:", "CapPrm:", "CapBnd:"):
        check(int(fields[capability], 16) == 0, f"{capability} {fields[capability]}")
    check(fields["NoNewPrivs:"] == "1", "no-new-privileges is set")
    writable = podman("exec", name, "sh", "-c", r"""
        for dir in / /etc /usr/local/bin /var/tmp /run /home /data /tmp; do
            if ( : > "$dir/.w" ) 2>/dev/null; then rm -f "$dir/.w"; echo "$dir"; fi
        done""").stdout.split()
    check(writable == ["/data", "/tmp"], f"writable: {writable}, expected only /data and /tmp")
    log("hardening: uid 10001, no capabilities, no-new-privileges, only /data and /tmp writable")


def step_serving(port, upstream):
    base = f"http://127.0.0.1:{port}"
    for path, kind in (("/", "application/json"), ("/healthz", "application/json"), ("/openapi.yaml", "yaml"), ("/metrics", "text/plain")):
        status, headers, _ = request("GET", base + path)
        check(status == 200 and kind in headers.get("content-type", ""), f"GET {path}: {status} {headers.get('content-type')}")
    status, _, body = request("GET", base + "/albums?limit=2&count=true")
    check(status == 200 and len(json.loads(body)["items"]) == 2, f"GET /albums: {status}")
    status, headers, body = request("POST", base + "/albums", {"title": "Kind of Blue", "artist": "Miles Davis", "genre": "Jazz",
                                                               "year": 1959, "coverUrl": upstream.url("cover-blue.png")})
    check(status == 201, f"POST /albums: {status} {body[:200]}")
    album = json.loads(body)
    status, headers, cover = request("GET", f"{base}/albums/{album['id']}/cover")
    check(status == 200 and cover == COVER, f"GET cover: {status} ({len(cover)} bytes)")
    again = request("GET", f"{base}/albums/{album['id']}/cover")
    check(again[0] == 200 and upstream.count("cover-blue.png") == 1, f"the cover came from the cache in /data ({upstream.count('cover-blue.png')} fetches)")
    # A size variant, made by libvips in the container from the cached original.
    status, headers, variant = request("GET", f"{base}/albums/{album['id']}/cover?size=64", headers={"Accept": "image/webp,*/*"})
    check(status == 200 and headers.get("content-type") == "image/webp" and variant[:4] == b"RIFF" and variant[8:12] == b"WEBP",
          f"GET cover?size=64 as WebP: {status} {headers.get('content-type')} {variant[:12]!r}")
    # (An opaque original: JPEG when WebP is not accepted; PNG only for images with alpha.)
    status, headers, variant = request("GET", f"{base}/albums/{album['id']}/cover?size=128", headers={"Accept": "image/png, image/jpeg"})
    check(status == 200 and headers.get("content-type") == "image/jpeg" and variant.startswith(b"\xff\xd8\xff"),
          f"GET cover?size=128 as JPEG: {status} {headers.get('content-type')} {variant[:8]!r}")
    check(upstream.count("cover-blue.png") == 1, "the variants were made from the cached original")
    for method, path, body, expected in (
        ("PATCH", f"/albums/{album['id']}", {"year": 1960}, 200),
        ("GET", f"/albums/{album['id']}/table", None, 200),
        ("POST", f"/albums/{album['id']}/move", {"index": 0}, 200),
        ("GET", "/albums/at/0", None, 200),
        ("POST", "/undo", None, 200),
        ("PUT", "/state", {"currentAlbumIndex": 1}, 200),
        ("PATCH", "/settings", {"paging": {"defaultLimit": 42}}, 200),
        ("POST", "/libraries", {"id": "jazz", "name": "Jazz"}, 201),
        ("POST", "/libraries/jazz/albums", {"title": "A Love Supreme", "artist": "John Coltrane"}, 201),
        ("GET", "/changes?since=0", None, 200),
        ("GET", "/archive", None, 200),
    ):
        headers = {"Content-Type": "application/merge-patch+json"} if method == "PATCH" else {}
        status, _, answer = request(method, base + path, body, headers)
        check(status == expected, f"{method} {path}: {status}, expected {expected}: {answer[:300]}")
    status, _, body = request("GET", base + "/undo")
    check(status == 200 and json.loads(body)["depth"] >= 1, f"GET /undo: {body[:200]}")
    log("serving: index, health, spec, metrics, albums, covers (fetched once, then from /data; WebP and JPEG size variants), "
        "patch, table, move, undo, state, settings, libraries, changes, archive")
    return album


def step_token(name, port):
    base = f"http://127.0.0.1:{port}"
    check(request("POST", base + "/albums", {"title": "Locked out", "artist": "Nobody"}, token=None)[0] == 401, "locked from the start")
    status, _, _ = request("POST", base + "/albums", {"title": "Let in", "artist": "Token Holder"})
    check(status == 201, f"a write with the token: {status}")
    inspected = podman("inspect", name).stdout
    environment = json.loads(inspected)[0]["Config"]["Env"]
    check("BLUELIBRARY_TOKEN_FILE=/run/secrets/bluelibrary_token" in environment, f"the token's file in the environment: {environment}")
    check(TOKEN not in inspected and not any(v.startswith("BLUELIBRARY_TOKEN=") for v in environment), "podman inspect shows no token")
    log("token: locked from the start by BLUELIBRARY_TOKEN_FILE (a secret file, uid 10001, 0400, mounted read-only); "
        "podman inspect shows only the file's path")


def step_health(name, port, volume):
    check(health(name) == "healthy", "healthy once ready")
    podman("kill", "--signal", "STOP", name)
    status = eventually(lambda: health(name) == "unhealthy" and "unhealthy", 90, "unhealthy while the server is wedged (SIGSTOP)")
    podman("kill", "--signal", "CONT", name)
    eventually(lambda: health(name) == "healthy", 60, "healthy again after SIGCONT")
    # The same image told `serve --port 9090`: the healthcheck asks the port the server bound.
    other = f"{name}-port"
    start(other, volume + "-port", arguments=["serve", "--port", "9090"], publish=False)
    eventually(lambda: health(other) == "healthy", 60, "healthy with serve --port 9090")
    check('"port":9090' in logs(other), "the server listened on 9090")
    podman("rm", "-f", "-t", "0", other)
    podman("volume", "rm", "-f", volume + "-port")
    log(f"health: healthy once ready, {status} while wedged (SIGSTOP), healthy after SIGCONT, healthy with serve --port 9090")


def nginx_site(upstream_port):
    """deploy/nginx.conf.example with its ports swapped (and TLS added, for the scheme)."""
    with open(os.path.join(REPO, "deploy", "nginx.conf.example")) as f:
        site = f.read()
    check("server 127.0.0.1:8080;" in site and re.search(r"^\s*listen 80;", site, re.M), "nginx.conf.example has the lines the test swaps")
    directory = tempfile.mkdtemp(prefix="bluelibrary-nginx-")
    cleanups.append(lambda: shutil.rmtree(directory, ignore_errors=True))
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=library.test",
                    "-keyout", f"{directory}/key.pem", "-out", f"{directory}/cert.pem"], check=True, capture_output=True)
    http_port, tls_port = free_port(), free_port()
    site = site.replace("server 127.0.0.1:8080;", f"server 127.0.0.1:{upstream_port};")
    site = re.sub(r"^(\s*)listen 80;", rf"\1listen 127.0.0.1:{http_port};\n\1listen 127.0.0.1:{tls_port} ssl;\n"
                  rf"\1ssl_certificate {directory}/cert.pem;\n\1ssl_certificate_key {directory}/key.pem;", site, count=1, flags=re.M)
    with open(f"{directory}/nginx.conf", "w") as f:
        f.write(f"""daemon off;
worker_processes 1;
pid {directory}/nginx.pid;
error_log {directory}/error.log info;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {directory}/body;
    proxy_temp_path {directory}/proxy;
    fastcgi_temp_path {directory}/fastcgi;
    uwsgi_temp_path {directory}/uwsgi;
    scgi_temp_path {directory}/scgi;
{site}
}}
""")
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    process = subprocess.Popen([nginx, "-p", directory, "-c", f"{directory}/nginx.conf"], stderr=subprocess.PIPE)
    cleanups.append(lambda: (process.terminate(), process.wait()))
    eventually(lambda: ready(http_port) or process.poll() is not None, 30, "nginx")
    check(process.poll() is None, f"nginx did not start: {process.stderr.read().decode()}")
    return http_port, tls_port, directory


def step_proxy(name, port):
    nginx_port, tls_port, directory = nginx_site(port)
    published = podman("port", name).stdout.split()
    check(published == ["8080/tcp", "->", f"127.0.0.1:{port}"], f"published on 127.0.0.1 only: {published}")

    # A client on 127.0.0.2 that spoofs X-Forwarded-For: the server logs the address nginx saw.
    connection = http.client.HTTPConnection("127.0.0.1", nginx_port, source_address=("127.0.0.2", 0), timeout=30)
    connection.request("GET", "/healthz", headers={"Host": f"library.test:{nginx_port}", "X-Forwarded-For": "203.0.113.9"})
    response = connection.getresponse()
    response.read()
    request_id = response.getheader("X-Request-Id")
    check(response.status == 200 and request_id, f"GET /healthz through nginx: {response.status}")
    line = eventually(lambda: next((l for l in logs(name).splitlines() if f'"requestId":"{request_id}"' in l), None), 30, "the access log line")
    check('"client":"127.0.0.2"' in line, f"client address through nginx: {line}")
    # Scheme and host: TLS at nginx, Location carries https and the external host.
    status, headers, _ = request("POST", f"https://127.0.0.1:{tls_port}/albums", {"title": "Low", "artist": "David Bowie"},
                                 {"Authorization": f"Bearer {TOKEN}"})
    check(status == 201 and headers.get("location", "").startswith(f"https://127.0.0.1:{tls_port}/albums/"), f"Location {headers.get('location')}")

    # SSE through nginx: an event arrives while the stream stays open.
    stream = http.client.HTTPConnection("127.0.0.1", nginx_port, timeout=30)
    stream.request("GET", "/events", headers={"Accept": "text/event-stream"})
    events = stream.getresponse()
    check(events.status == 200, f"GET /events through nginx: {events.status}")
    status, _, body = request("POST", f"http://127.0.0.1:{nginx_port}/albums", {"title": "Heroes", "artist": "David Bowie"},
                              {"Authorization": f"Bearer {TOKEN}"})
    check(status == 201, f"POST through nginx: {status}")
    added = json.loads(body)["id"]
    seen = ""
    while added not in seen:
        line = events.fp.readline().decode()
        check(line != "", "the event stream ended")
        seen += line
    check("album.added" in seen, f"SSE: {seen[-300:]}")
    stream.close()

    # A large archive (about 40 MiB) streams through nginx to the server, never spooled by nginx.
    albums = 120_000
    status, _, current = request("GET", f"http://127.0.0.1:{nginx_port}/archive")
    check(status == 200, f"GET /archive: {status}")
    head = json.loads(current)
    head["albums"], head["states"] = [], []
    prefix, suffix = json.dumps(head).encode().split(b'"albums": []')
    def chunks():
        yield prefix + b'"albums": ['
        for start in range(0, albums, 5000):
            yield (",".join(json.dumps({"id": f"01HZY8Q6V9{i:016d}", "title": f"Album {i:06d} " + "x" * 150, "artist": f"Artist {i % 997}",
                                        "genre": "Test", "year": 1950 + i % 70, "createdAt": "2024-05-01T12:00:00.000Z",
                                        "updatedAt": "2024-05-01T12:00:00.000Z"})
                            for i in range(start, min(albums, start + 5000))) + ("," if start + 5000 < albums else "")).encode()
        yield b"]" + suffix
    body = b"".join(chunks())
    upload = http.client.HTTPConnection("127.0.0.1", nginx_port, timeout=300)
    upload.putrequest("PUT", "/archive")
    for key, value in (("Content-Type", "application/json"), ("Content-Length", str(len(body))), ("Authorization", f"Bearer {TOKEN}")):
        upload.putheader(key, value)
    upload.endheaders()
    for offset in range(0, len(body), 1 << 20):
        upload.send(body[offset:offset + (1 << 20)])
    response = upload.getresponse()
    answer = response.read()
    check(response.status == 200, f"PUT /archive through nginx: {response.status} {answer[:300]}")
    status, _, listed = request("GET", f"http://127.0.0.1:{nginx_port}/albums?limit=1&count=true")
    check(json.loads(listed).get("count", json.loads(listed).get("total")) == albums, f"after the import: {listed[:200]}")
    with open(f"{directory}/error.log") as f:
        errors = f.read()
    check("buffered to a temporary file" not in errors, "nginx spooled the archive to disk instead of streaming it")
    log(f"proxy: client 127.0.0.2 (spoofed X-Forwarded-For ignored), https + external host in Location, "
        f"SSE event through nginx, {len(body) / 2**20:.0f} MiB PUT /archive streamed ({albums} albums)")
    return albums


def step_drain(name, port, upstream):
    base = f"http://127.0.0.1:{port}"
    status, _, body = request("POST", base + "/albums", {"title": "Held", "artist": "Upstream", "coverUrl": upstream.url("held-1.png")},
                              {"Authorization": f"Bearer {TOKEN}"})
    check(status == 201, f"POST album with a held cover: {status}")
    album = json.loads(body)["id"]
    result = {}
    def fetch():
        result["answer"] = request("GET", f"{base}/albums/{album}/cover", timeout=120)
    client = threading.Thread(target=fetch)
    client.start()
    eventually(lambda: upstream.count("held-1.png") == 1, 30, "the cover request to reach the upstream")
    stopper = subprocess.Popen(ROOT + ["podman", "stop", name], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    eventually(lambda: '"message":"draining"' in logs(name), 30, "the server to start draining")
    check(health_run(name) != 0, "the healthcheck fails while the server drains")
    upstream.released.set()
    client.join(120)
    status, _, cover = result.get("answer", (None, None, b""))
    check(status == 200 and cover == COVER, f"the in-flight request was answered: {status}")
    check(stopper.wait(120) == 0, f"podman stop: {stopper.stderr.read().decode()}")
    state = podman("inspect", "--format", "{{.State.ExitCode}} {{.State.Status}}", name).stdout.split()
    check(state == ["0", "exited"], f"exit after SIGTERM: {state}")
    check('"message":"stopped"' in logs(name), "the server logged its clean stop")
    log("drain: podman stop with a cover fetch in flight: unhealthy while draining, the request answered 200, exit code 0")


def step_volume(name, volume, albums):
    podman("rm", name)
    port = start(name + "-2", volume)
    wait_ready(name + "-2", port)
    base = f"http://127.0.0.1:{port}"
    status, _, listed = request("GET", base + "/albums?count=true&limit=1")
    listed = json.loads(listed)
    check(status == 200 and listed.get("count", listed.get("total")) == albums + 1, f"albums kept: {listed}")
    status, _, undo = request("GET", base + "/undo")
    check(json.loads(undo)["depth"] >= 1, f"undo kept: {undo}")
    status, _, settings = request("GET", base + "/settings", headers={"Authorization": f"Bearer {TOKEN}"})
    check(status == 200 and json.loads(settings).get("paging", {}).get("defaultLimit") == 42, f"settings kept: {status} {settings[:300]}")
    check(request("POST", base + "/albums", {"title": "No token", "artist": "Nobody"}, token=None)[0] == 401, "the token lock kept")
    check(request("POST", base + "/albums", {"title": "With token", "artist": "Holder"}, {"Authorization": f"Bearer {TOKEN}"})[0] == 201, "the token still opens it")
    covers = podman("exec", name + "-2", "sh", "-c", "ls /data/covers | grep -vc '^\\.' || true").stdout.strip()
    check(int(covers or "0") > 0, "the cover cache in /data is kept")
    # A bind mount the image's user may not write: a clear stop at start, exit code 2.
    directory = tempfile.mkdtemp(prefix="bluelibrary-data-")
    cleanups.append(lambda: shutil.rmtree(directory, ignore_errors=True))
    os.chmod(directory, 0o755)
    refused = podman("run", "--rm", "--network", "none", *HARDENING, "-v", f"{directory}:/data", IMAGE, check_status=False)
    check(refused.returncode == 2 and "cannot lock /data/bluelibrary.lock: Permission denied" in refused.stderr, f"an unwritable /data: {refused.returncode} {refused.stderr[-300:]}")
    log("volume: after podman rm and a new container: albums, undo, settings, the token lock and the cover cache are all there; "
        "an unwritable bind mount stops the server at start with exit code 2")
    return name + "-2"


def step_backup(name, volume):
    """Backup and restore in the hardened container, exactly as
    docs/backup-and-upgrade.md says (read-only root, uid 10001, the file copied out and in with podman's tools)."""
    base = f"http://127.0.0.1:{podman('port', name, '8080').stdout.strip().rsplit(':', 1)[1]}"
    status, _, listed = request("GET", base + "/albums?count=true&limit=1")
    albums = json.loads(listed)["total"]
    backups = tempfile.mkdtemp(prefix="bluelibrary-backups-")
    cleanups.append(lambda: shutil.rmtree(backups, ignore_errors=True))
    os.chmod(backups, 0o755)  # as a backup directory would be; the backups themselves are 0600
    # Out through stdout: `podman exec NAME bluelibrary backup --to - > FILE` (the file made 0600, as with umask 077).
    streamed = podman("exec", name, "bluelibrary", "backup", "--to", "-", binary=True)
    check(streamed.stdout.startswith(b"SQLite format 3\0"), f"backup --to - wrote the database on stdout: {streamed.stdout[:32]!r}")
    check(b"backed up" in streamed.stderr, f"its report on stderr: {streamed.stderr[-300:]!r}")
    backup = os.path.join(backups, "bluelibrary.sqlite")
    with open(os.open(backup, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as f:
        f.write(streamed.stdout)
    left = podman("exec", name, "ls", "-A", "/data").stdout.split()
    check(not [f for f in left if "backup" in f or f.endswith(".partial")], f"nothing of the copy is left in /data: {left}")
    # Out through a file in the volume and `podman cp`: the copy keeps its 0600.
    podman("exec", name, "bluelibrary", "backup", "--to", "/data/backup.sqlite")
    copied = os.path.join(backups, "copied.sqlite")
    podman("cp", f"{name}:/data/backup.sqlite", copied)
    podman("exec", name, "rm", "/data/backup.sqlite")
    check(os.stat(copied).st_mode & 0o777 == 0o600, f"podman cp kept the backup's mode 0600: {oct(os.stat(copied).st_mode)}")
    check(request("POST", base + "/albums", {"title": "After the backup", "artist": "Lost"})[0] == 201, "a write after the backup")
    podman("stop", name)
    # A restore from the backup on a read-only bind mount: the image's user cannot read a 0600
    # file of root's; refused with a message that says what to do instead.
    refused = podman("run", "--rm", "--network", "none", *HARDENING, "-v", f"{volume}:/data", "-v", f"{backups}:/backup:ro",
                     IMAGE, "restore", "--from", "/backup/copied.sqlite", check_status=False)
    check(refused.returncode == 1 and "Permission denied" in refused.stderr and "--from -" in refused.stderr,
          f"a backup the image's user cannot read: {refused.returncode} {refused.stderr[-400:]}")
    # In through stdin: `podman run --rm -i <the hardening> -v VOLUME:/data IMAGE restore --from - < FILE`.
    with open(backup, "rb") as f:
        restored = podman("run", "--rm", "-i", "--network", "none", *HARDENING, "-v", f"{volume}:/data", IMAGE,
                          "restore", "--from", "-", input=f.read(), binary=True, check_status=False)
    check(restored.returncode == 0 and b"restored standard input" in restored.stdout,
          f"restore --from -: {restored.returncode} {restored.stdout[-300:]!r} {restored.stderr[-300:]!r}")
    podman("start", name)
    port = podman("port", name, "8080").stdout.strip().rsplit(":", 1)[1]
    wait_ready(name, port)
    status, _, listed = request("GET", f"http://127.0.0.1:{port}/albums?count=true&limit=500")
    listed = json.loads(listed)
    titles = [album["title"] for album in listed["items"]]
    check(listed["total"] == albums and "After the backup" not in titles, f"the backup is served again: {listed['total']} albums, expected {albums}")
    owner = podman("exec", name, "stat", "-c", "%u %a", "/data/bluelibrary.sqlite").stdout.split()
    check(owner == ["10001", "600"], f"the restored database belongs to the image's user, 0600: {owner}")
    log(f"backup: out with podman exec (backup --to -) and podman cp (0600 kept); a 0600 file on a read-only mount "
        f"refused with what to do; in with podman run -i (restore --from -) in the hardened container; "
        f"{albums} albums served again, the later write gone")
    return name


def step_postgres():
    state = os.path.join(STATE, f"postgres-{RUN_ID}")
    script = os.path.join(REPO, "scripts", "postgres")
    url = subprocess.run([script, "start", state], check=True, capture_output=True, text=True).stdout.strip()
    cleanups.append(lambda cluster_state=state: subprocess.run([script, "remove", cluster_state], capture_output=True))
    # Let the containers in: listen on the gateway too, trust the test network (throwaway cluster).
    port = url.rsplit(":", 1)[1].split("/")[0]
    subprocess.run(["psql", "-X", "-q", "-d", url.replace("/bluelibrary", "/postgres"), "-c",
                    f"ALTER SYSTEM SET listen_addresses = '127.0.0.1,{GATEWAY}'"], check=True, capture_output=True)
    # The containers must give the password (the one in the secret file); the host stays trusted.
    subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-v", f"pw={DB_PASSWORD}", "-d", url.replace("/bluelibrary", "/postgres")],
                   input="ALTER ROLE postgres PASSWORD :'pw';\n", text=True, check=True, capture_output=True)
    cluster = os.path.realpath(os.path.join(state, "cluster"))
    subprocess.run(ROOT + ["sh", "-c", f"echo 'host all all {SUBNET} scram-sha-256' >> '{cluster}/pg_hba.conf'"], check=True)
    subprocess.run([script, "stop", state], check=True, capture_output=True)
    url = subprocess.run([script, "start", state], check=True, capture_output=True, text=True).stdout.strip()
    port = url.rsplit(":", 1)[1].split("/")[0]
    database = f"postgres://postgres@{GATEWAY}:{port}/bluelibrary"

    scale = compose("compose.yaml")
    instance = scale["services"]["bluelibrary-1"]
    flags = run_flags(instance, publish_ports=False)
    check("--read-only" in flags and "ALL" in flags and "no-new-privileges" in flags, f"compose.yaml's instances are hardened: {flags}")
    environment = {key: str(value) for key, value in instance["environment"].items() if key not in ("BLUELIBRARY_DATABASE_URL", "BLUELIBRARY_TRUSTED_PROXIES")}
    check(environment.get("BLUELIBRARY_DATABASE_PASSWORD_FILE") == "/run/secrets/db_password", f"compose.yaml's password file: {environment}")
    environment["BLUELIBRARY_DATABASE_URL"] = database
    secrets = {"bluelibrary_token": TOKEN_FILE, "db_password": secret_file("db_password", DB_PASSWORD)}
    # One data volume for both, as in compose.yaml (the shared cover cache).
    volume = f"bluelibrary-{RUN_ID}-pg"
    cleanups.append(lambda: podman("volume", "rm", "-f", volume, check_status=False))
    ports = {}
    for name in ("pg-1", "pg-2"):
        ports[name] = start(f"{RUN_ID}-{name}", volume, environment, service=instance, secrets=secrets)
    for name in ports:
        wait_ready(f"{RUN_ID}-{name}", ports[name])
    one, two = (f"http://127.0.0.1:{ports[n]}" for n in ("pg-1", "pg-2"))
    stream = http.client.HTTPConnection("127.0.0.1", ports["pg-2"], timeout=30)
    stream.request("GET", "/events", headers={"Accept": "text/event-stream"})
    events = stream.getresponse()
    status, _, body = request("POST", one + "/albums", {"title": "Shared", "artist": "Both Instances"})  # with the token
    check(status == 201, f"POST on the first: {status}")
    added = json.loads(body)["id"]
    check(request("GET", f"{two}/albums/{added}")[0] == 200, "the second instance reads the first one's album")
    seen = ""
    while added not in seen:
        line = events.fp.readline().decode()
        check(line != "", "the second instance's event stream ended")
        seen += line
    stream.close()
    check(request("POST", two + "/albums", {"title": "Locked", "artist": "Out"}, token=None)[0] == 401, "locked from the start")
    # A new token set through one (token set finds the database and its password file as serve does) holds on the other.
    podman("exec", "-i", f"{RUN_ID}-pg-1", "bluelibrary", "token", "set", input=NEW_TOKEN)
    eventually(lambda: request("POST", two + "/albums", {"title": "Locked", "artist": "Out"})[0] == 401, 30, "the new token on the second instance")
    check(request("DELETE", f"{two}/albums/{added}", token=NEW_TOKEN)[0] in (200, 204), "a delete with the new token on the second")
    # With the new token: a key sent with a read must be right, even while reads are open.
    check(request("GET", f"{one}/albums/{added}", token=NEW_TOKEN)[0] == 404, "the first sees the second's delete")
    check(request("GET", f"{one}/albums/{added}")[0] == 401, "the old token is refused on a read too")
    for name in ports:
        podman("stop", f"{RUN_ID}-{name}")
        code = podman("inspect", "--format", "{{.State.ExitCode}}", f"{RUN_ID}-{name}").stdout.strip()
        check(code == "0", f"{name} exit code {code}")
    inspected = podman("inspect", f"{RUN_ID}-pg-1").stdout
    check(DB_PASSWORD not in inspected and TOKEN not in inspected, "podman inspect shows no password and no token")
    log("postgres: two hardened containers on one database, the password (with @ / :) and the token from secret files, "
        "the database demanding the password: shared albums, events across instances, one token lock, both healthy, both exit 0")


def main():
    started = time.monotonic()
    podman("network", "create", "--subnet", SUBNET, "--gateway", GATEWAY, NETWORK)
    cleanups.append(lambda: podman("network", "rm", "-f", NETWORK, check_status=False))
    step_image()
    volume = f"bluelibrary-{RUN_ID}"
    cleanups.append(lambda: podman("volume", "rm", "-f", volume, check_status=False))
    cleanups.append(lambda: podman("volume", "rm", "-f", volume + "-port", check_status=False))
    name = f"{RUN_ID}-single"
    port = start(name, volume, {"BLUELIBRARY_COVER_ALLOW": GATEWAY})
    wait_ready(name, port)
    upstream = Upstream()  # on the gateway's address, which exists once a container is on the network
    step_hardening(name)
    step_serving(port, upstream)
    step_token(name, port)
    step_health(name, port, volume)
    albums = step_proxy(name, port)
    step_drain(name, port, upstream)
    second = step_volume(name, volume, albums)
    step_backup(second, volume)
    podman("stop", second)
    step_postgres()
    log(f"all container checks passed in {time.monotonic() - started:.0f} s")


main()
