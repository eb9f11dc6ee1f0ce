#!/usr/bin/python3
"""A contract-faithful FAKE of the Proxmox VE REST API, for the proxmox plugin's tests only.

This is the one fake backend in banlieue: no real PVE cluster exists on the build machines.
Its shapes follow the public PVE API documentation (api2/json): every answer is a
{"data": ...} envelope, errors carry PVE's message in the HTTP reason phrase (and in the body's
"message"), parameter errors are 400 with an "errors" map, and tasks are UPIDs.

Endpoints (all under /api2/json):
  GET    /version
  GET    /nodes                                   node list with status online|offline
  GET    /nodes/{node}/storage                    storages (storage, type, content, enabled, active)
  GET    /nodes/{node}/network[?type=bridge]      interfaces (iface, type, active)
  GET    /cluster/nextid                          lowest free VMID (a string, as PVE answers)
  GET    /cluster/resources?type=vm               every guest with node, vmid, name, status, tags,
                                                  lock, and pvestatd's figures (maxcpu, maxmem,
                                                  maxdisk, uptime, cpu, mem, ...; see guest_stats)
  GET    /nodes/{node}/qemu                       guests of a node
  POST   /nodes/{node}/qemu/{vmid}/clone          newid, name, full, storage -> UPID (a template
                                                  clones linked unless full=1; linked refuses storage)
  GET    /nodes/{node}/qemu/{vmid}/config[?current=1]  with pending changes applied, unless current=1
  PUT    /nodes/{node}/qemu/{vmid}/config         synchronous config change; on a running guest
                                                  what cannot change live goes pending
  GET    /nodes/{node}/qemu/{vmid}/pending        [{key, value, pending, delete}]
  GET    /nodes/{node}/qemu/{vmid}/status/current
  POST   /nodes/{node}/qemu/{vmid}/status/{start,stop,shutdown,reboot,suspend,resume}  -> UPID
  PUT    /nodes/{node}/qemu/{vmid}/resize         disk, size
  DELETE /nodes/{node}/qemu/{vmid}[?purge=1&destroy-unreferenced-disks=1] -> UPID
  GET    /nodes/{node}/tasks/{upid}/status        status running|stopped, exitstatus "OK" or error
  GET    /nodes/{node}/qemu/{vmid}/agent/network-get-interfaces
  GET    /cluster/status                          cluster and node entries (node: name, ip, online)
  GET    /storage/{storage}                       a storage's config (type, content, path)
  POST   /nodes/{node}/qemu                       create: vmid, name, scsiN=<storage>:0,import-from=<volid> -> UPID
  POST   /nodes/{node}/qemu/{vmid}/template       convert to a template -> UPID
  GET    /nodes/{node}/qemu/{vmid}/snapshot       snapshots (name, snaptime, vmstate, description,
                                                  parent, snapstate) and the pseudo-entry
                                                  "current" whose parent is the running state's
  POST   /nodes/{node}/qemu/{vmid}/snapshot       snapname, description, vmstate -> UPID (qmsnapshot)
  GET    /nodes/{node}/qemu/{vmid}/snapshot/{snapname}            [{cmd: rollback}, {cmd: config}]
  GET    /nodes/{node}/qemu/{vmid}/snapshot/{snapname}/config     the snapshot's configuration
  PUT    /nodes/{node}/qemu/{vmid}/snapshot/{snapname}/config     description
  POST   /nodes/{node}/qemu/{vmid}/snapshot/{snapname}/rollback   [start] -> UPID (qmrollback)
  DELETE /nodes/{node}/qemu/{vmid}/snapshot/{snapname}[?force=1]  -> UPID (qmdelsnapshot)
  POST   /nodes/{node}/qemu/{vmid}/termproxy      [serial=serial0..3] -> {user, ticket, port, upid}
  GET    /nodes/{node}/qemu/{vmid}/vncwebsocket   port, vncticket; with "Upgrade: websocket"
                                                  the connection becomes the console's websocket

Behaviours:
  - API-token auth: "Authorization: PVEAPIToken=user@realm!tokenid=secret"; a wrong token is
    401 "invalid token value!".
  - Ticket auth: POST /access/ticket (username, password; no auth) answers ticket
    "PVE:<user>:<hex time>::<signature>" and CSRFPreventionToken; a wrong password is 401
    "authentication failure". Requests then carry the cookie PVEAuthCookie=<ticket>; a ticket
    older than its lifetime (PVE: 2 hours) or unknown is 401
    "invalid ticket", and a write (POST/PUT/DELETE) without the matching CSRFPreventionToken
    header is 401 "Permission denied - invalid csrf token". No credentials at all: 401
    "No ticket".
  - Tasks finish TASK_SECONDS after they start; a clone holds the source template's lock and
    the target storage's cfs-lock while it runs, so a concurrent clone of the same template
    answers 500 "can't lock file '/var/lock/qemu-server/lock-<vmid>.conf' - got timeout".
  - Offline nodes answer 595 "no route to host" for anything below /nodes/{node}.
  - A clone onto a taken VMID is 500 "unable to create VM <id>: config file already exists".
  - Starting a VM whose config holds "args: fail-start" produces a task that ends with an
    error exit status (a failing task).
  - Deleting a running VM fails with 500 "VM <id> is running - destroy failed".
  - A config change to a running VM applies at once only for PVE's fast-plug options (name,
    description, tags, ...) and what its `hotplug` option (default network,disk,usb) covers; the
    rest (cores, sockets, memory, bios, ipconfigN, ...) goes to the pending section, which a
    start or a reboot applies. GET .../config shows the pending values (PVE's default),
    GET .../config?current=1 the running ones, GET .../pending both.
  - Files: the "local" storage is a directory storage (content includes "import" and
    "snippets", PVE 8.2's import content type) whose path is a real directory of this process,
    <dir>/storage/local. PVE takes disk images and snippets only as files on the node, put
    there out of band (the plugin uses SFTP to a real sshd on loopback, as to a real node), so
    the fake reads what arrived: `import-from=local:import/<file>` must name an existing
    qcow2/raw/vmdk file (else 500 "volume ... does not exist"), and the create task records
    the file's size and sha256 in the guest (`imported`) as real PVE would copy its bytes; a
    `cicustom: user=local:snippets/<file>` must exist when the guest starts, and the start task
    records its content (`cloudinitUser`) as the cloud-init drive would carry it.
  - Snapshots follow the PVE API documentation and qemu-server's behaviour (the API viewer's
    /nodes/{node}/qemu/{vmid}/snapshot tree; PVE::AbstractConfig's snapshot_create, _rollback
    and _delete). A snapname is a `pve-configid` ([a-zA-Z][a-zA-Z0-9_-]+) of at most 40
    characters, else 400 "Parameter verification failed." naming `snapname`; "current" is
    500 "unable to use snapshot name 'current' (reserved name)". Everything else is decided in
    the task, as PVE's worker does, so it shows as the task's exit status: "snapshot name '<n>'
    already used", "you can't take a snapshot if it's a template", "VM is locked (<lock>)",
    "snapshot '<n>' does not exist". While a snapshot is made the guest holds lock
    `snapshot` and the snapshot snapstate `prepare`; it copies the configuration, takes
    snaptime (epoch seconds) and, with vmstate=1 on a running guest only, the RAM (its
    `vmstate` volume; the list answers vmstate 1). Done, it becomes the `parent` of the
    current state. A rollback (lock `rollback`) stops the guest, puts the snapshot's
    configuration back (pending changes dropped) and starts the guest again only when the
    snapshot holds its RAM or start=1; a delete (lock `snapshot-delete`, snapstate `delete`)
    hands the snapshot's parent to its children and to the current state. Destroying a guest
    removes its snapshots with it; converting a guest with snapshots to a template is 500
    "unable to create template, because VM contains snapshots"; a clone copies the current
    configuration, never the snapshots or their `parent` link.

  - Consoles follow qemu-server's termproxy and vncwebsocket (PVE/API2/Qemu.pm), pve-http-
    server's websocket_proxy (PVE/APIServer/AnyEvent.pm) and pve-xtermjs's termproxy:
    termproxy starts a `vncproxy` task that listens on a port of 5900-5999 for ONE connection
    for 10 s (then the task fails "failed waiting for client: timed out") and answers the
    caller's user (user@realm, or user@realm!tokenid for a token), a VNC ticket
    "PVEVNC:<hex time>::<signature>" bound to that user and /vms/<vmid>, valid from 20 s before
    to 40 s after it was made, and the port. vncwebsocket authenticates like any endpoint,
    then checks the ticket for the caller and the guest (else 500 "permission denied - invalid
    vnc ticket"); with an upgrade request (Upgrade: websocket, Sec-WebSocket-Version 13, a
    Sec-WebSocket-Key; the subprotocol asked for is echoed) it answers 101 and proxies to the
    port, which takes its one connection (a second attempt finds nobody listening and the
    connection is dropped). Client frames must be masked, whole (FIN), without RSV bits and at
    most 128 KiB, else the connection is dropped; pings are answered with pongs; a close frame
    shuts the connection down (PVE sends no close frame back, nor when the guest side ends: it
    drops the connection). Server frames are binary. Over it termproxy reads
    "<user>:<ticket>\n" within 10 s, checks them as /access/ticket does (VM.Console on
    /vms/<vmid>; a wrong one closes the connection without a word) and answers "OK"; then
    input comes as "0:<len>:<bytes>", resizes as "1:<cols>:<rows>:", "2" is a ping; output is
    raw bytes. Behind it `qm terminal <vmid> -iface serialN` needs the guest running ("VM <id>
    not running") and serialN a socket ("serial interface 'serialN' is not configured",
    "wrong serial type on interface 'serialN'"); the fake's guest then prints a login prompt,
    echoes what it gets and records each line it received in the guest's `serialInput`. QEMU's
    serial socket serves one client at a time: a second session stays silent until the first
    has gone.

Test-only (outside /api2/json, no auth): GET /_fake/state dumps every guest (with its
`snapshots`) and every file under the storage directories (`files`, for leak checks), and
counts the API requests served (`requests`, by method and path in `requestLog`), POST
/_fake/node?name=X&status=online|offline flips a node, POST /_fake/expire-tickets
ages every ticket issued so far past its lifetime (the state dump counts "logins"), POST /_fake/config?vmid=&key=&value=
edits a guest behind the plugin's back, POST /_fake/stale-nextid?count=N makes the next N
/cluster/nextid answers name a taken VMID (a race with another client). POST
/_fake/console?next=expired makes the next termproxy ticket one already past its 40 s (and
?next=bad-accept answers the next upgrade with a wrong Sec-WebSocket-Accept, which PVE never
does: it checks the client), POST
/_fake/console?end=<vmid> ends the guest side of that guest's console sessions (as when the VM
stops), POST /_fake/agent?vmid=N&state=down|up stops or restarts the guest's QEMU guest agent
(its agent calls then answer 500 "QEMU guest agent is not running", as PVE does); the state dump lists open console sessions (`consoleSessions`: vmid, user, iface) and
every console ticket issued (`consoleTickets`, for leak checks). Started by the C++ harness with
--port 0; it prints "READY <port> <ca.pem>" once listening with a certificate from a test CA
it generated with the openssl command.
"""

import argparse
import base64
import hashlib
import json
import os
import re
import secrets
import select
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TASK_SECONDS = 0.3

# PVE's `pve-snapshot-name`: format pve-configid (PVE::JSONSchema's $CONFIGID_RE), at most 40
# characters.
SNAPNAME_RE = re.compile(r"[a-zA-Z][a-zA-Z0-9_-]+")
SNAPNAME_MAX = 40

# PVE's VNC tickets (PVE::AccessControl::verify_vnc_ticket): valid from 20 s before to 40 s
# after they were made. termproxy waits 10 s for its client and 10 s for the ticket line.
VNC_TICKET_MIN_AGE, VNC_TICKET_MAX_AGE = -20, 40
TERMPROXY_WAIT = 10.0
WEBSOCKET_MAX_PAYLOAD = 128 * 1024  # pve-http-server's websocket_proxy
WEBSOCKET_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class PveError(Exception):
    def __init__(self, code, message, errors=None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.errors = errors


class State:
    def __init__(self, token, password, storage_root):
        self.lock = threading.Lock()
        self.token = token
        self.user = token.split("!")[0]  # the token's owner logs in with the password
        self.password = password
        self.tickets = {}  # ticket -> (issued at, CSRF token)
        self.ticket_lifetime = 7200.0
        self.logins = 0
        self.storage_root = storage_root
        self.nodes = {
            "pve1": "online",
            "pve2": "online",
            "pve3": "offline",
        }
        self.storages = {
            "local": {"type": "dir", "content": "iso,vztmpl,backup,snippets,import", "enabled": 1,
                      "path": os.path.join(storage_root, "local")},
            "local-lvm": {"type": "lvmthin", "content": "images,rootdir", "enabled": 1},
        }
        for st in self.storages.values():
            if "path" in st:
                for sub in ("import", "snippets", "images"):
                    os.makedirs(os.path.join(st["path"], sub), exist_ok=True)
        self.bridges = ["vmbr0", "vmbr1"]
        # vmid -> guest; the templates exist on every node, as they would on shared storage.
        self.vms = {}
        for node in ("pve1", "pve2"):
            base = 9000 if node == "pve1" else 9001
            self.vms[base] = self.new_vm(base, node, "ubuntu-template", template=True)
        self.tasks = {}  # upid -> task
        self.locks = {}  # lock name -> upid holding it
        self.counter = 0
        self.stale_nextid = 0  # how many /cluster/nextid answers name a taken VMID
        self.malformed_resources = 0  # how many /cluster/resources answers are not a list
        self.requests = []  # "METHOD /path" of every API request served, in order
        self.vnc_tickets = {}  # ticket -> (user, path, time made)
        self.termproxies = {}  # port -> a termproxy waiting for its one connection
        self.console_sessions = {}  # id -> {vmid, user, iface}: connections past "OK"
        self.console_next = None  # "expired": how the next termproxy ticket is made
        self.console_end = set()  # vmids whose console sessions end
        self.serial_holders = {}  # vmid -> the session QEMU's serial socket serves

    @staticmethod
    def new_vm(vmid, node, name, template=False):
        return {
            "vmid": vmid,
            "node": node,
            "name": name,
            "status": "stopped",
            "template": 1 if template else 0,
            "lock": None,
            "config": {
                "name": name,
                "cores": 1,
                "sockets": 1,
                "memory": 512,
                "scsi0": "local-lvm:%s-%d-disk-0,size=10G" % ("base" if template else "vm", vmid),
                "net0": "virtio=BC:24:11:00:00:01,bridge=vmbr0",
            },
        }

    def upid(self, node, kind, vmid):
        self.counter += 1
        now = int(time.time())
        return "UPID:%s:%08X:%08X:%08X:%s:%s:root@pam!banlieue:" % (
            node, 4000 + self.counter, 100000 + self.counter, now, kind, vmid)

    def start_task(self, node, kind, vmid, finish):
        """finish() runs when the task ends and returns its exit status."""
        upid = self.upid(node, kind, vmid)
        self.tasks[upid] = {"node": node, "type": kind, "id": str(vmid), "upid": upid,
                            "starttime": int(time.time()), "status": "running",
                            "ends": time.monotonic() + TASK_SECONDS, "finish": finish,
                            "exitstatus": None}
        return upid

    def volume_path(self, volid, content):
        """The file behind "<storage>:<content>/<file>", or a PveError as PVE words it."""
        match = re.fullmatch(r"([a-zA-Z][a-zA-Z0-9._-]*):([a-z]+)/([^/]+)", volid)
        if not match or match.group(2) != content:
            raise PveError(400, "Parameter verification failed.",
                           {"volume": "unable to parse volume ID '%s'" % volid})
        st = self.storages.get(match.group(1))
        if st is None:
            raise PveError(500, "storage '%s' does not exist" % match.group(1))
        if content not in st["content"].split(",") or "path" not in st:
            raise PveError(500, "storage '%s' does not support content-type '%s'"
                           % (match.group(1), content))
        path = os.path.join(st["path"], content, match.group(3))
        if not os.path.isfile(path):
            raise PveError(500, "volume '%s' does not exist" % volid)
        return path

    def files(self):
        out = []
        for name, st in self.storages.items():
            if "path" not in st:
                continue
            for root, _, names in os.walk(st["path"]):
                for n in names:
                    rel = os.path.relpath(os.path.join(root, n), st["path"])
                    out.append("%s:%s" % (name, rel))
        return sorted(out)

    def advance(self):
        """Ends every task whose time has come (called on every request, under the lock)."""
        now = time.monotonic()
        for task in self.tasks.values():
            if task["status"] == "running" and task["ends"] <= now:
                try:
                    task["exitstatus"] = task["finish"]() or "OK"
                except PveError as e:
                    task["exitstatus"] = e.message
                task["status"] = "stopped"


class ConsoleMixin:
    """termproxy, vncwebsocket and what runs behind them (see the module's docstring)."""

    def termproxy(self, state, node, vm, params):
        serial = params.get("serial")
        if serial is not None and serial not in ("serial0", "serial1", "serial2", "serial3"):
            raise PveError(400, "Parameter verification failed.",
                           {"serial": "value '%s' does not have a value in the enumeration "
                                      "'serial0, serial1, serial2, serial3'" % serial})
        vmid = vm["vmid"]
        made = time.time()
        if state.console_next == "expired":
            made -= VNC_TICKET_MAX_AGE + 20
            state.console_next = None
        ticket = "PVEVNC:%08X::%s" % (int(made), secrets.token_urlsafe(48))
        state.vnc_tickets[ticket] = (self.user, "/vms/%d" % vmid, made)
        port = next(p for p in range(5900, 6000) if p not in state.termproxies)
        proxy = {"vmid": vmid, "node": node, "iface": serial, "port": port}

        def finish():  # nobody connected in time
            state.termproxies.pop(port, None)
            return "failed waiting for client: timed out"
        upid = state.start_task(node, "vncproxy", vmid, finish)
        state.tasks[upid]["ends"] = time.monotonic() + TERMPROXY_WAIT
        proxy["upid"] = upid
        state.termproxies[port] = proxy
        return {"user": self.user, "ticket": ticket, "port": port, "upid": upid}

    @staticmethod
    def vnc_ticket_valid(state, ticket, user, path):
        made = state.vnc_tickets.get(ticket)
        if made is None or made[0] != user or made[1] != path:
            return False
        age = time.time() - made[2]
        return VNC_TICKET_MIN_AGE < age < VNC_TICKET_MAX_AGE

    def vncwebsocket(self, state, vm, params):
        errors = {k: "property is missing and it is not optional"
                  for k in ("port", "vncticket") if not params.get(k)}
        if errors:
            raise PveError(400, "Parameter verification failed.", errors)
        try:
            port = int(params["port"])
        except ValueError:
            raise PveError(400, "Parameter verification failed.",
                           {"port": "type check ('integer') failed - got '%s'" % params["port"]})
        if not 5900 <= port <= 5999:
            raise PveError(400, "Parameter verification failed.",
                           {"port": "value must have a minimum value of 5900"
                            if port < 5900 else "value must have a maximum value of 5999"})
        if not self.vnc_ticket_valid(state, params["vncticket"], self.user,
                                     "/vms/%d" % vm["vmid"]):
            raise PveError(500, "permission denied - invalid vnc ticket")
        return {"port": str(port)}

    # -- the websocket (pve-http-server's websocket_proxy) ----------------------------------
    def websocket_proxy(self, state, port):
        self.close_connection = True
        upgrade_error = None
        if self.headers.get("Sec-WebSocket-Version") != "13":
            upgrade_error = "unsupported websocket-version '%s'" % self.headers.get(
                "Sec-WebSocket-Version", "")
        key = self.headers.get("Sec-WebSocket-Key")
        if not key:
            upgrade_error = "missing websocket-key"
        if upgrade_error:
            raise PveError(501, upgrade_error)
        with state.lock:
            proxy = state.termproxies.pop(port, None)
            if proxy is not None:
                state.tasks[proxy["upid"]]["ends"] = float("inf")
        if proxy is None:
            return  # nobody listens on the port (any more): PVE drops the connection
        with state.lock:
            # Test-only: an upgrade answered with a Sec-WebSocket-Accept that does not match.
            if state.console_next == "bad-accept":
                state.console_next, key = None, key + "x"
        accept = base64.b64encode(hashlib.sha1((key + WEBSOCKET_GUID).encode()).digest())
        lines = ["HTTP/1.1 101 Switching Protocols", "Upgrade: websocket",
                 "Connection: upgrade", "Sec-WebSocket-Accept: " + accept.decode()]
        if self.headers.get("Sec-WebSocket-Protocol"):
            lines.append("Sec-WebSocket-Protocol: " + self.headers["Sec-WebSocket-Protocol"])
        self.wfile.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        self.wfile.flush()
        session_id = proxy["upid"]
        try:
            self.termproxy_session(state, proxy, session_id)
        except (OSError, ValueError, ConnectionError):
            pass
        finally:
            with state.lock:
                state.console_sessions.pop(session_id, None)
                if state.serial_holders.get(proxy["vmid"]) == session_id:
                    del state.serial_holders[proxy["vmid"]]
                task = state.tasks[proxy["upid"]]
                if task["status"] == "running":
                    task["status"], task["exitstatus"] = "stopped", "OK"
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def ws_send(self, payload, opcode=0x2):
        for start in range(0, max(len(payload), 1), WEBSOCKET_MAX_PAYLOAD):
            chunk = payload[start:start + WEBSOCKET_MAX_PAYLOAD]
            head = bytes([0x80 | opcode])
            if len(chunk) <= 125:
                head += bytes([len(chunk)])
            elif len(chunk) <= 0xFFFF:
                head += bytes([126]) + len(chunk).to_bytes(2, "big")
            else:
                head += bytes([127]) + len(chunk).to_bytes(8, "big")
            self.connection.sendall(head + chunk)

    def ws_frames(self, state, vmid):
        """Yields the payloads of the client's data frames; None when nothing came for a
        while. Ends (StopIteration) when the client closes, or raises ValueError on what PVE
        refuses (and when self.ws_deadline passes)."""
        buf = b""
        self.connection.settimeout(30)
        while True:
            while True:
                if len(buf) >= 2:
                    head, length = buf[0], buf[1] & 0x7F
                    if not head & 0x80:
                        raise ValueError("received fragmented websocket frame")
                    if head & 0x70:
                        raise ValueError("received websocket frame with RSV flags")
                    if not buf[1] & 0x80:
                        raise ValueError("received unmasked websocket frame from client")
                    offset = 2
                    if length == 126 and len(buf) >= 4:
                        length, offset = int.from_bytes(buf[2:4], "big"), 4
                    elif length == 127 and len(buf) >= 10:
                        length, offset = int.from_bytes(buf[2:10], "big"), 10
                    elif length >= 126:
                        break
                    if length > WEBSOCKET_MAX_PAYLOAD:
                        raise ValueError("received too large websocket frame (len = %d)" % length)
                    if len(buf) < offset + 4 + length:
                        break
                    mask = buf[offset:offset + 4]
                    payload = bytes(b ^ mask[i % 4] for i, b in
                                    enumerate(buf[offset + 4:offset + 4 + length]))
                    buf = buf[offset + 4 + length:]
                    opcode = head & 0x0F
                    if opcode in (1, 2):
                        yield payload
                    elif opcode == 8:
                        return  # PVE shuts the connection down, without a close frame back
                    elif opcode == 9:
                        self.ws_send(payload, 0xA)
                    elif opcode != 0xA:
                        raise ValueError("received unhandled websocket opcode %d" % opcode)
                else:
                    break
            with state.lock:
                if vmid in state.console_end:
                    return
            if self.ws_deadline is not None and time.monotonic() > self.ws_deadline:
                raise ValueError("failed reading ticket: timed out")
            if self.connection.pending() == 0:
                ready, _, _ = select.select([self.connection], [], [], 0.1)
                if not ready:
                    yield None
                    continue
            data = self.connection.recv(65536)
            if not data:
                return
            buf += data

    def termproxy_session(self, state, proxy, session_id):
        vmid = proxy["vmid"]
        self.ws_deadline = time.monotonic() + TERMPROXY_WAIT
        frames = self.ws_frames(state, vmid)
        line = b""
        for payload in frames:
            if payload:
                line += payload
            if b"\n" in line:
                break
        else:
            return
        first, _, rest = line.partition(b"\n")
        user, sep, ticket = first.decode(errors="replace").partition(":")
        with state.lock:
            # termproxy asks /access/ticket with the ticket as password, the path and the
            # privilege: a VNC ticket of that user for /vms/<vmid> (and VM.Console, which the
            # fake's user holds).
            if not sep or not self.vnc_ticket_valid(state, ticket, user, "/vms/%d" % vmid):
                return  # termproxy exits: the connection closes without a word
            state.console_sessions[session_id] = {"vmid": vmid, "user": user,
                                                  "iface": proxy["iface"]}
        self.ws_deadline = None
        self.ws_send(b"OK")
        guest = SerialGuest(self, state, proxy, session_id)
        if not guest.attach():
            return
        queue = rest
        for payload in frames:
            if payload:
                queue += payload
            queue = self.xterm_input(queue, guest)

    @staticmethod
    def xterm_input(queue, guest):
        """Takes PVE's xterm.js messages off the front of `queue`; returns what is left."""
        while queue:
            kind = queue[:1]
            if kind == b"0":
                header = re.match(rb"0:(\d+):", queue)
                if header is None:
                    return queue  # incomplete
                length = int(header.group(1))
                start = header.end()
                if len(queue) < start + length:
                    return queue
                guest.receive(queue[start:start + length])
                queue = queue[start + length:]
            elif kind == b"1":
                resize = re.match(rb"1:(\d+):(\d+):", queue)
                if resize is None:
                    return queue
                guest.resize(int(resize.group(1)), int(resize.group(2)))
                queue = queue[resize.end():]
            else:
                queue = queue[1:]  # "2" (a ping) or anything termproxy ignores
        return queue


class SerialGuest:
    """What `qm terminal` reaches: the guest's serial line, scripted as a getty with echo."""

    def __init__(self, handler, state, proxy, session):
        self.handler, self.state, self.proxy, self.session = handler, state, proxy, session
        self.line = b""
        self.lines = 0

    def attach(self):
        with self.state.lock:
            vm = self.state.vms.get(self.proxy["vmid"])
            iface = self.proxy["iface"]
            error = None
            if vm is None:
                error = "Configuration file 'nodes/%s/qemu-server/%d.conf' does not exist" % (
                    self.proxy["node"], self.proxy["vmid"])
            elif iface is None:
                iface = next((o for o in ("serial0", "serial1", "serial2", "serial3")
                              if vm["config"].get(o) == "socket"), None)
                if iface is None:
                    error = "unable to find a serial interface"
            elif not vm["config"].get(iface):
                error = "serial interface '%s' is not configured" % iface
            elif vm["config"][iface] != "socket":
                error = "wrong serial type on interface '%s'" % iface
            if error is None and vm["status"] != "running":
                error = "VM %d not running" % vm["vmid"]
            name = vm["name"] if vm else ""
        if error:
            self.handler.ws_send((error + "\n").encode())
            return False
        # QEMU's serial socket serves one client: another `qm terminal` waits in its backlog.
        waited = time.monotonic() + 60
        while True:
            with self.state.lock:
                holder = self.state.serial_holders.setdefault(self.proxy["vmid"], self.session)
                if holder == self.session or self.proxy["vmid"] in self.state.console_end:
                    break
            if time.monotonic() > waited:
                return False
            time.sleep(0.05)
        self.name = name
        self.handler.ws_send(("\r\nUbuntu 24.04 LTS %s ttyS0\r\n\r\n%s login: "
                              % (name, name)).encode())
        return True

    def resize(self, cols, rows):
        self.size = (cols, rows)

    def receive(self, data):
        echo = b""
        for byte in data:
            char = bytes([byte])
            if char in (b"\r", b"\n"):
                with self.state.lock:
                    vm = self.state.vms.get(self.proxy["vmid"])
                    if vm is not None:
                        vm.setdefault("serialInput", []).append(
                            self.line.decode(errors="replace"))
                self.line = b""
                self.lines += 1
                echo += b"\r\nPassword: " if self.lines % 2 else (
                    b"\r\n\r\nLogin incorrect\r\n%s login: " % self.name.encode())
            else:
                self.line += char
                echo += char
        self.handler.ws_send(echo)


class Handler(ConsoleMixin, BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "pve-api-daemon/3.0"

    def log_message(self, fmt, *args):  # quiet: the C++ test prints what matters
        pass

    # -- plumbing ---------------------------------------------------------------------------
    def reply(self, code, data, reason=None, errors=None):
        body = {"data": data}
        if errors:
            body["errors"] = errors
        if code >= 400 and reason:
            body["message"] = reason + "\n"
        raw = json.dumps(body).encode()
        self.send_response(code, reason)
        self.send_header("Content-Type", "application/json;charset=UTF-8")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def params(self):
        parsed = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(parsed.query))
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            body = self.rfile.read(length).decode()
            ctype = self.headers.get("Content-Type", "")
            if ctype.startswith("application/json"):
                query.update({k: str(v) for k, v in json.loads(body).items()})
            else:
                query.update(dict(urllib.parse.parse_qsl(body, keep_blank_values=True)))
        return parsed.path, query

    def handle_any(self, method):
        state = self.server.state
        path, params = self.params()
        try:
            if path.startswith("/_fake/"):
                with state.lock:
                    state.advance()
                    return self.reply(200, self.fake(method, path, params))
            if not path.startswith("/api2/json/"):
                raise PveError(501, "Method '%s %s' not implemented" % (method, path))
            parts = [urllib.parse.unquote(p) for p in path[len("/api2/json/"):].split("/") if p]
            with state.lock:
                state.requests.append("%s /%s" % (method, "/".join(parts)))
            if parts == ["access", "ticket"] and method == "POST":
                with state.lock:
                    return self.reply(200, self.login(state, params))
            self.user = self.authenticate(state, method)
            with state.lock:
                state.advance()
                data = self.route(state, method, parts, params)
            # pve-http-server: an upgrade to a path ending in "websocket" whose API call
            # succeeded becomes the websocket proxy.
            if (method == "GET" and parts[-1] == "vncwebsocket"
                    and self.headers.get("Upgrade", "").lower() == "websocket"):
                return self.websocket_proxy(state, int(data["port"]))
            self.reply(200, data)
        except PveError as e:
            self.reply(e.code, None, e.message, e.errors)

    def do_GET(self):
        self.handle_any("GET")

    def do_POST(self):
        self.handle_any("POST")

    def do_PUT(self):
        self.handle_any("PUT")

    def do_DELETE(self):
        self.handle_any("DELETE")

    def login(self, state, params):
        if params.get("username") != state.user or params.get("password") != state.password:
            raise PveError(401, "authentication failure")
        state.logins += 1
        now = time.time()
        ticket = "PVE:%s:%08X::%s" % (state.user, int(now), secrets.token_urlsafe(48))
        csrf = "%08X:%s" % (int(now), secrets.token_urlsafe(32))
        state.tickets[ticket] = (time.monotonic(), csrf)
        return {"username": state.user, "ticket": ticket, "CSRFPreventionToken": csrf,
                "cap": {"vms": {"VM.Allocate": 1}, "storage": {"Datastore.AllocateSpace": 1}}}

    def authenticate(self, state, method):
        auth = self.headers.get("Authorization", "")
        if auth.startswith("PVEAPIToken="):
            if auth != "PVEAPIToken=" + state.token:
                raise PveError(401, "invalid token value!")
            return state.token.split("=")[0]  # user@realm!tokenid
        cookies = {}
        for part in self.headers.get("Cookie", "").split(";"):
            name, _, value = part.strip().partition("=")
            cookies[name] = urllib.parse.unquote(value)
        ticket = cookies.get("PVEAuthCookie")
        if not ticket:
            raise PveError(401, "No ticket")
        with state.lock:
            issued = state.tickets.get(ticket)
            if issued is None or time.monotonic() - issued[0] > state.ticket_lifetime:
                raise PveError(401, "invalid ticket")
            csrf = issued[1]
        if method != "GET" and self.headers.get("CSRFPreventionToken") != csrf:
            raise PveError(401, "Permission denied - invalid csrf token")
        return state.user

    # -- test-only endpoints ------------------------------------------------------------------
    def fake(self, method, path, params):
        state = self.server.state
        if path == "/_fake/state":
            running = [t["upid"] for t in state.tasks.values() if t["status"] == "running"]
            return {"vms": [dict(vm, config=dict(vm["config"]),
                                 pendingDelete=sorted(vm.get("pendingDelete", ())))
                            for vm in state.vms.values()],
                    "runningTasks": running, "nodes": state.nodes, "files": state.files(),
                    "logins": state.logins, "requests": len(state.requests),
                    "consoleSessions": list(state.console_sessions.values()),
                    "consoleTickets": list(state.vnc_tickets),
                    "requestLog": state.requests}
        if path == "/_fake/expire-tickets" and method == "POST":
            for ticket, (issued, csrf) in list(state.tickets.items()):
                state.tickets[ticket] = (issued - state.ticket_lifetime - 1, csrf)
            return None
        if path == "/_fake/node" and method == "POST":
            state.nodes[params["name"]] = params["status"]
            return None
        if path == "/_fake/config" and method == "POST":
            vm = state.vms[int(params["vmid"])]
            vm["config"][params["key"]] = params["value"]
            return None
        if path == "/_fake/stale-nextid" and method == "POST":
            state.stale_nextid = int(params["count"])
            return None
        if path == "/_fake/vanish" and method == "POST":
            # A guest destroyed behind banlieue's back (an admin, a lost host).
            del state.vms[int(params["vmid"])]
            return None
        if path == "/_fake/console" and method == "POST":
            if "next" in params:
                state.console_next = params["next"]
            if "end" in params:
                state.console_end.add(int(params["end"]))
            return None
        if path == "/_fake/agent" and method == "POST":
            # The guest's qemu-guest-agent stops (or starts) answering: a guest still booting,
            # or an image without the agent, while the VM's config still says agent=1.
            state.vms[int(params["vmid"])]["agentDown"] = params["state"] == "down"
            return None
        if path == "/_fake/malformed-resources" and method == "POST":
            state.malformed_resources = int(params["count"])
            return None
        raise PveError(404, "no such fake endpoint")

    # -- the API ------------------------------------------------------------------------------
    def route(self, state, method, parts, params):
        if parts == ["version"]:
            return {"version": "8.2.4", "release": "8.2", "repoid": "faca0a5e"}
        if parts == ["nodes"] and method == "GET":
            return [{"node": n, "status": s, "type": "node", "id": "node/" + n,
                     "maxcpu": 16, "maxmem": 68719476736} for n, s in state.nodes.items()]
        if parts == ["cluster", "nextid"] and method == "GET":
            if "vmid" in params:
                if int(params["vmid"]) in state.vms:
                    raise PveError(400, "Parameter verification failed.",
                                   {"vmid": "VM %s already exists" % params["vmid"]})
                return params["vmid"]
            if state.stale_nextid > 0 and state.vms:
                # Another client's clone raced us: the id offered is already taken.
                state.stale_nextid -= 1
                return str(max(state.vms))
            vmid = 100
            while vmid in state.vms:
                vmid += 1
            return str(vmid)
        if parts == ["cluster", "status"] and method == "GET":
            members = [{"type": "cluster", "id": "cluster", "name": "banlieue-test",
                        "nodes": len(state.nodes), "quorate": 1, "version": 3}]
            for i, (n, s) in enumerate(state.nodes.items()):
                members.append({"type": "node", "id": "node/" + n, "name": n, "nodeid": i + 1,
                                "ip": "127.0.0.1", "online": 1 if s == "online" else 0,
                                "local": 1 if i == 0 else 0, "level": ""})
            return members
        if len(parts) == 2 and parts[0] == "storage" and method == "GET":
            st = state.storages.get(parts[1])
            if st is None:
                raise PveError(500, "storage '%s' does not exist" % parts[1])
            out = {"storage": parts[1], "type": st["type"], "content": st["content"],
                   "digest": "0" * 40}
            if "path" in st:
                out["path"] = st["path"]
            return out
        if parts == ["cluster", "resources"] and method == "GET":
            if state.malformed_resources > 0:
                # A proxy or a broken cluster filesystem answering something else.
                state.malformed_resources -= 1
                return {"errors": "cluster filesystem not ready"}
            return [self.resource(vm, cluster=True) for vm in state.vms.values()]
        if len(parts) >= 2 and parts[0] == "nodes":
            node = parts[1]
            if node not in state.nodes:
                raise PveError(500, "hostname lookup '%s' failed - failed to get address info" % node)
            if state.nodes[node] != "online":
                raise PveError(595, "Connection refused")
            return self.node_route(state, node, method, parts[2:], params)
        raise PveError(501, "Method '%s /%s' not implemented" % (method, "/".join(parts)))

    @staticmethod
    def resource(vm, cluster=False):
        entry = {"id": "qemu/%d" % vm["vmid"], "type": "qemu", "vmid": vm["vmid"],
                 "node": vm["node"], "name": vm["name"], "status": vm["status"],
                 "template": vm["template"]}
        if vm["lock"]:
            entry["lock"] = vm["lock"]
        if vm["config"].get("tags"):
            entry["tags"] = vm["config"]["tags"]
        if cluster:
            entry.update(Handler.guest_stats(vm))
        return entry

    @staticmethod
    def guest_stats(vm):
        """What pvestatd broadcasts of a guest every 10 s and /cluster/resources reports
        (PVE::API2Tools::extract_vm_stats): its status is QEMU's own (qmpstatus, so "paused"
        for a suspended guest), the sizes come from its current config (not the pending one),
        and a running guest's uptime and usage move between two listings."""
        config = vm["config"]
        running = vm["status"] == "running"
        size = re.search(r"size=(\d+)([KMGT]?)", str(config.get("scsi0", "")))
        maxdisk = 0
        if size:
            maxdisk = int(size.group(1)) * 1024 ** " KMGT".index(size.group(2) or " ")
        cpus = int(config.get("vcpus") or int(config.get("sockets", 1)) * int(config.get("cores", 1)))
        maxmem = int(config.get("memory", 512)) * 1048576
        uptime = int(time.monotonic() - vm["startedAt"]) if running and "startedAt" in vm else 0
        return {"status": (vm.get("qmpstatus") or vm["status"]) if running else vm["status"],
                "maxcpu": cpus, "maxmem": maxmem, "maxdisk": maxdisk, "disk": 0,
                "uptime": uptime, "cpu": 0.0123 if running else 0,
                "mem": maxmem // 4 + uptime * 4096 if running else 0,
                "netin": uptime * 1500 if running else 0, "netout": uptime * 700 if running else 0,
                "diskread": 0, "diskwrite": 0}

    def node_route(self, state, node, method, rest, params):
        if rest == ["storage"]:
            return [{"storage": name, "type": s["type"], "content": s["content"],
                     "enabled": s["enabled"], "active": 1, "shared": 0,
                     "total": 107374182400, "avail": 53687091200}
                    for name, s in state.storages.items()]
        if rest == ["network"]:
            ifaces = [{"iface": b, "type": "bridge", "active": 1, "autostart": 1}
                      for b in state.bridges] + [{"iface": "eno1", "type": "eth", "active": 1}]
            if params.get("type") == "bridge":
                ifaces = [i for i in ifaces if i["type"] == "bridge"]
            return ifaces
        if len(rest) == 3 and rest[0] == "tasks" and rest[2] == "status":
            task = state.tasks.get(rest[1])
            if task is None or task["node"] != node:
                raise PveError(500, "no such task")
            out = {k: task[k] for k in ("node", "type", "id", "upid", "starttime", "status")}
            out["pid"] = 4000
            if task["status"] == "stopped":
                out["exitstatus"] = task["exitstatus"]
            return out
        if rest == ["qemu"] and method == "GET":
            return [self.resource(vm) for vm in state.vms.values() if vm["node"] == node]
        if rest == ["qemu"] and method == "POST":
            return self.create(state, node, params)
        if len(rest) >= 2 and rest[0] == "qemu":
            vmid = int(rest[1])
            vm = state.vms.get(vmid)
            if vm is None or vm["node"] != node:
                raise PveError(500, "Configuration file 'nodes/%s/qemu-server/%d.conf' does not exist"
                               % (node, vmid))
            return self.vm_route(state, node, vm, method, rest[2:], params)
        raise PveError(501, "Method '%s' not implemented" % method)

    def vm_route(self, state, node, vm, method, rest, params):
        vmid = vm["vmid"]
        if rest and rest[0] == "snapshot":
            return self.snapshot_route(state, node, vm, method, rest[1:], params)
        if rest == [] and method == "DELETE":
            if vm["status"] == "running":
                raise PveError(500, "VM %d is running - destroy failed" % vmid)
            if vm["lock"]:
                raise PveError(500, "VM is locked (%s)" % vm["lock"])
            vm["lock"] = "destroyed"

            def finish():
                state.vms.pop(vmid, None)
            return state.start_task(node, "qmdestroy", vmid, finish)
        if rest == ["config"] and method == "GET":
            # PVE answers the configuration with its pending changes applied unless current=1.
            config = dict(vm["config"]) if params.get("current") == "1" else self.effective(vm)
            return dict(config, digest="0" * 40)
        if rest == ["pending"] and method == "GET":
            return self.pending_list(vm)
        if rest == ["config"] and method in ("PUT", "POST"):
            if vm["lock"]:
                raise PveError(500, "VM is locked (%s)" % vm["lock"])
            for key, value in params.items():
                if key in ("cores", "sockets", "memory") and not value.isdigit():
                    raise PveError(400, "Parameter verification failed.",
                                   {key: "type check ('integer') failed - got '%s'" % value})
                if key == "cicustom":
                    for part in value.split(","):
                        kind, _, volid = part.partition("=")
                        if kind not in ("user", "network", "meta", "vendor") or not volid:
                            raise PveError(400, "Parameter verification failed.",
                                           {"cicustom": "invalid format - '%s'" % part})
                        state.volume_path(volid, "snippets")
                if key.startswith("net") and "bridge=" in value:
                    bridge = value.split("bridge=")[1].split(",")[0]
                    if bridge not in state.bridges:
                        raise PveError(500, "bridge '%s' does not exist" % bridge)
            # A stopped guest takes every change at once. A running one takes at once only
            # what PVE can change live (names and tags; NICs, disks and memory when its
            # `hotplug` option allows them, default network,disk,usb); the rest waits in the
            # pending section for the next start (or a reboot), as PVE does.
            pending = vm.setdefault("pending", {})
            deletes = vm.setdefault("pendingDelete", set())
            for key in params.get("delete", "").split(","):
                if not key:
                    continue
                if self.applies_now(vm, key):
                    vm["config"].pop(key, None)
                    pending.pop(key, None)
                else:
                    deletes.add(key)
            for key, value in params.items():
                if key in ("delete", "digest"):
                    continue
                typed = int(value) if value.isdigit() and key in (
                    "cores", "sockets", "memory") else value
                if self.applies_now(vm, key):
                    vm["config"][key] = typed
                    pending.pop(key, None)
                else:
                    pending[key] = typed
                deletes.discard(key)
            vm["name"] = vm["config"].get("name", vm["name"])
            return None
        if rest == ["resize"] and method == "PUT":
            disk = params.get("disk", "")
            if disk not in vm["config"]:
                raise PveError(500, "disk '%s' does not exist" % disk)
            vm["config"][disk] = vm["config"][disk].split(",size=")[0] + ",size=" + params["size"]
            return None
        if rest == ["termproxy"] and method == "POST":
            return self.termproxy(state, node, vm, params)
        if rest == ["vncwebsocket"] and method == "GET":
            return self.vncwebsocket(state, vm, params)
        if rest == ["status", "current"]:
            return {"vmid": vmid, "name": vm["name"], "status": vm["status"],
                    "qmpstatus": vm.get("qmpstatus", vm["status"]), "cpus": vm["config"]["cores"],
                    "maxmem": vm["config"]["memory"] * 1048576,
                    "agent": 1 if vm["config"].get("agent") else 0}
        if len(rest) == 2 and rest[0] == "status" and method == "POST":
            return self.power(state, node, vm, rest[1], params)
        if rest == ["clone"] and method == "POST":
            return self.clone(state, node, vm, params)
        if rest == ["template"] and method == "POST":
            if vm.get("snapshots"):
                raise PveError(500, "unable to create template, because VM contains snapshots")
            if vm["status"] == "running":
                raise PveError(500, "you can't convert a VM to template if VM is running")
            if vm["lock"]:
                raise PveError(500, "VM is locked (%s)" % vm["lock"])
            vm["lock"] = "template"

            def finish():
                vm["lock"] = None
                vm["template"] = 1
                vm["config"]["template"] = 1
                for key, value in list(vm["config"].items()):
                    if isinstance(value, str) and ":vm-%d-disk-" % vmid in value:
                        vm["config"][key] = value.replace(":vm-", ":base-", 1)
            return state.start_task(node, "qmtemplate", vmid, finish)
        if rest == ["agent", "network-get-interfaces"]:
            if vm["status"] != "running" or not vm["config"].get("agent") or vm.get("agentDown"):
                raise PveError(500, "QEMU guest agent is not running")
            return {"result": [
                {"name": "lo", "ip-addresses": [{"ip-address": "127.0.0.1",
                                                 "ip-address-type": "ipv4", "prefix": 8}]},
                {"name": "eth0", "hardware-address": "bc:24:11:00:00:01",
                 "ip-addresses": [{"ip-address": "10.0.%d.%d" % (vmid // 256 % 256, vmid % 256),
                                   "ip-address-type": "ipv4", "prefix": 24}]}]}
        raise PveError(501, "Method '%s' not implemented" % method)

    # PVE's options that change at once even on a running guest (its "fast plug" options).
    FAST_PLUG = {"name", "description", "tags", "onboot", "protection", "startup", "lock"}

    @classmethod
    def applies_now(cls, vm, key):
        if vm["status"] != "running" or key in cls.FAST_PLUG:
            return True
        hotplug = str(vm["config"].get("hotplug", "network,disk,usb")).split(",")
        if re.fullmatch(r"net\d+", key):
            return "network" in hotplug
        if re.fullmatch(r"(scsi|virtio|sata)\d+", key):
            return "disk" in hotplug
        if key == "memory":
            return "memory" in hotplug and bool(vm["config"].get("numa"))
        return False

    @staticmethod
    def effective(vm):
        config = dict(vm["config"])
        for key in vm.get("pendingDelete", ()):
            config.pop(key, None)
        config.update(vm.get("pending", {}))
        return config

    @staticmethod
    def pending_list(vm):
        """GET .../pending: every key with its current value, its pending value, or delete=1."""
        pending, deletes = vm.get("pending", {}), vm.get("pendingDelete", set())
        out = []
        for key in sorted(set(vm["config"]) | set(pending) | deletes):
            entry = {"key": key}
            if key in vm["config"]:
                entry["value"] = vm["config"][key]
            if key in pending:
                entry["pending"] = pending[key]
            if key in deletes:
                entry["delete"] = 1
            out.append(entry)
        return out

    @classmethod
    def apply_pending(cls, vm):
        vm["config"] = cls.effective(vm)
        vm["pending"], vm["pendingDelete"] = {}, set()

    def power(self, state, node, vm, action, params):
        vmid = vm["vmid"]
        if vm["template"]:
            raise PveError(500, "you can't start a vm if it's a template")
        if vm["lock"]:
            raise PveError(500, "VM is locked (%s)" % vm["lock"])
        if action == "start":
            if vm["status"] == "running":
                raise PveError(500, "VM %d already running" % vmid)

            def finish():
                self.apply_pending(vm)  # a start boots the configuration with its pending changes
                if vm["config"].get("args") == "fail-start":
                    vm.pop("qmpstatus", None)
                    raise PveError(500, "start failed: QEMU exited with code 1")
                # The cloud-init drive is generated at start from the snippets referenced.
                for part in vm["config"].get("cicustom", "").split(","):
                    kind, _, volid = part.partition("=")
                    if kind == "user":
                        with open(state.volume_path(volid, "snippets")) as f:
                            vm["cloudinitUser"] = f.read()
                vm["status"] = "running"
                vm["startedAt"] = time.monotonic()
            return state.start_task(node, "qmstart", vmid, finish)
        if action in ("suspend", "resume"):
            if vm["status"] != "running":
                raise PveError(500, "VM %d not running" % vmid)

            def finish():
                vm["qmpstatus"] = "paused" if action == "suspend" else "running"
            return state.start_task(node, "qm" + action, vmid, finish)
        if action in ("stop", "shutdown"):
            def finish():
                vm["status"] = "stopped"
                vm.pop("qmpstatus", None)
            return state.start_task(node, "qm" + action, vmid, finish)
        if action == "reboot":
            # A shutdown and a start in one task: the guest comes back with its pending changes.
            if vm["status"] != "running":
                raise PveError(500, "VM %d not running" % vmid)

            def finish():
                self.apply_pending(vm)
                vm["reboots"] = vm.get("reboots", 0) + 1
                vm["startedAt"] = time.monotonic()
            return state.start_task(node, "qmreboot", vmid, finish)
        raise PveError(501, "Method 'POST status/%s' not implemented" % action)

    def create(self, state, node, params):
        if "vmid" not in params:
            raise PveError(400, "Parameter verification failed.",
                           {"vmid": "property is missing and it is not optional"})
        vmid = int(params["vmid"])
        if vmid in state.vms:
            raise PveError(500, "unable to create VM %d - VM %d already exists on node '%s'"
                           % (vmid, vmid, state.vms[vmid]["node"]))
        imports = {}
        config = {"name": params.get("name", "VM%d" % vmid), "cores": 1, "sockets": 1,
                  "memory": 512}
        for key, value in params.items():
            if key in ("vmid", "name"):
                continue
            if re.fullmatch(r"(scsi|virtio|sata|ide)\d+", key) and "import-from=" in value:
                target = value.split(":")[0]
                st = state.storages.get(target)
                if st is None or "images" not in st["content"].split(","):
                    raise PveError(500, "storage '%s' does not exist or holds no images" % target)
                source = value.split("import-from=")[1].split(",")[0]
                path = state.volume_path(source, "import")
                if not re.search(r"\.(qcow2|raw|vmdk)$", path):
                    raise PveError(400, "Parameter verification failed.",
                                   {key: "import-from: unsupported format of '%s'" % source})
                imports[key] = (target, source, path)
                continue
            config[key] = int(value) if value.isdigit() and key in (
                "cores", "sockets", "memory") else value
        vm = state.new_vm(vmid, node, config["name"])
        vm["config"] = config
        vm["lock"] = "create"
        state.vms[vmid] = vm

        def finish():
            # Real PVE converts the file into a new volume during the task; the fake reads it.
            vm["lock"] = None
            vm["imported"] = {}
            for i, (key, (target, source, path)) in enumerate(sorted(imports.items())):
                if not os.path.isfile(path):
                    state.vms.pop(vmid, None)
                    raise PveError(500, "import failed - could not open '%s'" % path)
                with open(path, "rb") as f:
                    data = f.read()
                gib = max(1, (len(data) + (1 << 30) - 1) >> 30)
                vm["config"][key] = "%s:vm-%d-disk-%d,size=%dG" % (target, vmid, i, gib)
                vm["imported"][key] = {"from": source, "bytes": len(data),
                                       "sha256": hashlib.sha256(data).hexdigest()}
        return state.start_task(node, "qmcreate", vmid, finish)

    def clone(self, state, node, src, params):
        if "newid" not in params:
            raise PveError(400, "Parameter verification failed.",
                           {"newid": "property is missing and it is not optional"})
        newid = int(params["newid"])
        # Templates are cloned linked unless full=1 (PVE's default); other guests always full.
        linked = src["template"] and params.get("full", "0") in ("0", "")
        if linked and "storage" in params:
            raise PveError(400, "Parameter verification failed.",
                           {"storage": "parameter 'storage' not allowed for linked clones"})
        src_disk = src["config"]["scsi0"].split(",")[0]
        target_storage = src_disk.split(":")[0] if linked else params.get("storage", "local-lvm")
        if target_storage not in state.storages:
            raise PveError(500, "storage '%s' does not exist" % target_storage)
        if newid in state.vms:
            raise PveError(500, "unable to create VM %d: config file already exists" % newid)
        # A clone holds the source's config lock and the target storage's cluster-wide lock
        # until its task ends (that is what makes parallel clones of one template collide).
        for name in ("lock-%d.conf" % src["vmid"], "storage-" + target_storage):
            holder = state.locks.get(name)
            if holder and state.tasks[holder]["status"] == "running":
                if name.startswith("lock-"):
                    raise PveError(500, "can't lock file '/var/lock/qemu-server/%s' - got timeout"
                                   % name)
                raise PveError(500, "cfs-lock '%s' error: got lock request timeout" % name)
        target = params.get("target", node)
        if target not in state.nodes:
            raise PveError(400, "Parameter verification failed.",
                           {"target": "no such cluster node '%s'" % target})
        vm = state.new_vm(newid, target, params.get("name", "Copy-of-VM-" + src["name"]))
        # The current configuration only: snapshots and their parent link stay with the source.
        vm["config"] = dict(src["config"], name=vm["name"])
        vm["config"].pop("parent", None)
        if params.get("description"):
            vm["config"]["description"] = params["description"]
        if linked:
            # The clone's disk is a copy-on-write child of the template's base volume.
            vm["config"]["scsi0"] = "%s/vm-%d-disk-0,size=10G" % (src_disk, newid)
        else:
            vm["config"]["scsi0"] = "%s:vm-%d-disk-0,size=10G" % (target_storage, newid)
        vm["lock"] = "clone"
        state.vms[newid] = vm

        def finish():
            vm["lock"] = None
        upid = state.start_task(node, "qmclone", src["vmid"], finish)
        state.locks["lock-%d.conf" % src["vmid"]] = upid
        state.locks["storage-" + target_storage] = upid
        return upid


    # -- snapshots (PVE::API2::Qemu and PVE::AbstractConfig) ------------------------------------
    @staticmethod
    def check_snapname(name):
        if name is None:
            raise PveError(400, "Parameter verification failed.",
                           {"snapname": "property is missing and it is not optional"})
        if not SNAPNAME_RE.fullmatch(name):
            raise PveError(400, "Parameter verification failed.",
                           {"snapname": "invalid format - invalid configuration ID '%s'\n" % name})
        if len(name) > SNAPNAME_MAX:
            raise PveError(400, "Parameter verification failed.",
                           {"snapname": "value may only be %d characters long" % SNAPNAME_MAX})
        return name

    @staticmethod
    def check_boolean(params, key):
        value = params.get(key)
        if value is None or value == "":
            return False
        if re.fullmatch(r"1|true|yes|on", value, re.I):
            return True
        if re.fullmatch(r"0|false|no|off", value, re.I):
            return False
        raise PveError(400, "Parameter verification failed.",
                       {key: "type check ('boolean') failed - got '%s'" % value})

    # Keys a snapshot never copies from the configuration (__snapshot_copy_config).
    SNAPSHOT_SKIP = {"snapshots", "snapstate", "snaptime", "vmstate", "lock", "digest",
                     "description"}

    @classmethod
    def copy_config(cls, source, dest):
        for key, value in source.items():
            if key in cls.SNAPSHOT_SKIP or re.fullmatch(r"unused\d+", key):
                continue
            dest[key] = value

    @staticmethod
    def failed_task(state, node, kind, vmid, message):
        """A task that ends with `message`: what PVE's worker dies with before it changes anything."""
        def finish():
            raise PveError(500, message)
        return state.start_task(node, kind, vmid, finish)

    def snapshot_route(self, state, node, vm, method, rest, params):
        vmid = vm["vmid"]
        snapshots = vm.setdefault("snapshots", {})
        if rest == [] and method == "GET":
            out = []
            for name, snap in snapshots.items():
                item = {"name": name, "snaptime": snap.get("snaptime", 0),
                        "vmstate": 1 if snap.get("vmstate") else 0,
                        "description": snap.get("description", "")}
                for key in ("parent", "snapstate"):
                    if snap.get(key):
                        item[key] = snap[key]
                out.append(item)
            current = {"name": "current", "digest": "0" * 40, "description": "You are here!",
                       "running": 1 if vm["status"] == "running" else 0}
            if vm["config"].get("parent"):
                current["parent"] = vm["config"]["parent"]
            out.append(current)
            return out
        if rest == [] and method == "POST":
            name = self.check_snapname(params.get("snapname"))
            save_vmstate = self.check_boolean(params, "vmstate")
            if name == "current":
                raise PveError(500, "unable to use snapshot name 'current' (reserved name)")
            # The worker's prepare step (__snapshot_prepare) runs as the task starts.
            if vm["template"]:
                return self.failed_task(state, node, "qmsnapshot", vmid,
                                        "you can't take a snapshot if it's a template")
            if vm["lock"]:
                return self.failed_task(state, node, "qmsnapshot", vmid,
                                        "VM is locked (%s)" % vm["lock"])
            if name in snapshots:
                return self.failed_task(state, node, "qmsnapshot", vmid,
                                        "snapshot name '%s' already used" % name)
            for other in snapshots.values():
                if other.get("parent") == name:
                    other.pop("parent")  # PVE drops a parent link that would make a cycle
            vm["lock"] = "snapshot"
            snap = {}
            if save_vmstate and vm["status"] == "running":
                snap["vmstate"] = "local-lvm:vm-%d-state-%s,size=4G" % (vmid, name)
            self.copy_config(vm["config"], snap)
            snap["snapstate"] = "prepare"
            snap["snaptime"] = int(time.time())
            if params.get("description"):
                snap["description"] = params["description"]
            snapshots[name] = snap

            def finish():
                snap.pop("snapstate", None)
                vm["lock"] = None
                vm["config"]["parent"] = name
            return state.start_task(node, "qmsnapshot", vmid, finish)
        if not rest:
            raise PveError(501, "Method '%s' not implemented" % method)
        name = self.check_snapname(rest[0])
        if rest[1:] == [] and method == "GET":
            return [{"cmd": "rollback"}, {"cmd": "config"}]
        if rest[1:] == ["config"] and method == "GET":
            if name not in snapshots:
                raise PveError(500, "snapshot '%s' does not exist" % name)
            return dict(snapshots[name], digest="0" * 40)
        if rest[1:] == ["config"] and method == "PUT":
            if params.get("description") is None:
                return None
            if vm["lock"]:
                raise PveError(500, "VM is locked (%s)" % vm["lock"])
            if name not in snapshots:
                raise PveError(500, "snapshot '%s' does not exist" % name)
            snapshots[name]["description"] = params["description"]
            return None
        if rest[1:] == ["rollback"] and method == "POST":
            start = self.check_boolean(params, "start")
            if vm["template"]:
                return self.failed_task(state, node, "qmrollback", vmid,
                                        "you can't rollback if vm is a template")
            snap = snapshots.get(name)
            if snap is None:
                return self.failed_task(state, node, "qmrollback", vmid,
                                        "snapshot '%s' does not exist" % name)
            if snap.get("snapstate"):
                return self.failed_task(
                    state, node, "qmrollback", vmid,
                    "unable to rollback to incomplete snapshot (snapstate = %s)" % snap["snapstate"])
            if vm["lock"]:
                return self.failed_task(state, node, "qmrollback", vmid,
                                        "VM is locked (%s)" % vm["lock"])
            # The guest is stopped before its disks go back.
            vm["status"] = "stopped"
            vm.pop("qmpstatus", None)
            vm["lock"] = "rollback"

            def finish():
                config = {k: v for k, v in vm["config"].items()
                          if k == "description" or re.fullmatch(r"unused\d+", k)}
                self.copy_config(snap, config)
                config["parent"] = name
                vm["config"] = config
                vm["pending"], vm["pendingDelete"] = {}, set()
                vm["name"] = config.get("name", vm["name"])
                vm["lock"] = None
                vm["rollbacks"] = vm.get("rollbacks", 0) + 1
                if snap.get("vmstate") or start:
                    vm["status"] = "running"
                    vm["startedAt"] = time.monotonic()
            return state.start_task(node, "qmrollback", vmid, finish)
        if rest[1:] == [] and method == "DELETE":
            self.check_boolean(params, "force")
            snap = snapshots.get(name)
            if snap is None:
                return self.failed_task(state, node, "qmdelsnapshot", vmid,
                                        "snapshot '%s' does not exist" % name)
            if vm["lock"]:
                return self.failed_task(state, node, "qmdelsnapshot", vmid,
                                        "VM is locked (%s)" % vm["lock"])
            if vm["template"]:
                return self.failed_task(state, node, "qmdelsnapshot", vmid,
                                        "you can't delete a snapshot if vm is a template")
            vm["lock"] = "snapshot-delete"
            snap["snapstate"] = "delete"

            def finish():
                parent = snap.get("parent")
                for holder in [vm["config"]] + list(snapshots.values()):
                    if holder.get("parent") == name:
                        if parent:
                            holder["parent"] = parent
                        else:
                            holder.pop("parent")
                snapshots.pop(name, None)
                vm["lock"] = None
            return state.start_task(node, "qmdelsnapshot", vmid, finish)
        raise PveError(501, "Method '%s' not implemented" % method)


def make_certificates(directory, address):
    """A throwaway CA and a server certificate for `address` (and localhost on loopback)."""
    def run(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True)
    ca_key, ca = os.path.join(directory, "ca.key"), os.path.join(directory, "ca.pem")
    key, csr, cert = (os.path.join(directory, n) for n in ("server.key", "server.csr", "server.pem"))
    ext = os.path.join(directory, "ext.cnf")
    with open(ext, "w") as f:
        names = "IP:%s" % address + (",DNS:localhost" if address == "127.0.0.1" else "")
        f.write("subjectAltName=%s\nbasicConstraints=CA:FALSE\n" % names)
    run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", ca_key, "-out", ca, "-days", "2", "-subj", "/CN=banlieue fake PVE test CA")
    run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", key, "-out", csr, "-subj", "/CN=localhost")
    run("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", cert,
        "-days", "2", "-extfile", ext)
    return ca, cert, key


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--address", default="127.0.0.1",
                        help="listen address: loopback, or an address the test's own cluster made")
    parser.add_argument("--token", default="banlieue@pve!provider=5f1d3c9e-2b7a-4c11-9d0e-8a6b4f2c7e10")
    parser.add_argument("--password", default="correct horse battery staple")
    parser.add_argument("--dir", default=None, help="where the test CA goes (default: a tmpdir)")
    args = parser.parse_args()
    directory = args.dir or tempfile.mkdtemp(prefix="fake-pve-")
    ca, cert, key = make_certificates(directory, args.address)
    server = ThreadingHTTPServer((args.address, args.port), Handler)
    server.daemon_threads = True
    server.state = State(args.token, args.password, os.path.join(directory, "storage"))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    print("READY %d %s" % (server.server_address[1], ca), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
