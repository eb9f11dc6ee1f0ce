#!/usr/bin/python3
"""Cross-checks the fake PVE API (fake_pve.py) with an independent client: Debian's
python3-proxmoxer, which was written against real PVE. If the fake's envelopes, token header,
ticket and CSRF handling, UPID tasks or error status lines drifted from PVE's, this client would fail here, not only our
plugin (which shares our own understanding of the API). The snapshot endpoints are driven as
PVE documents them: list with the "current" pseudo-entry, create/rollback/delete as tasks whose
exit status carries PVE's refusals, the snapshot's config, and the snapname format."""

import os
import subprocess
import sys
import tempfile
import time

from proxmoxer import ProxmoxAPI
from proxmoxer.backends.https import AuthenticationError
from proxmoxer.core import ResourceException

HERE = os.path.dirname(os.path.abspath(__file__))
SECRET = "5f1d3c9e-2b7a-4c11-9d0e-8a6b4f2c7e10"
PASSWORD = "correct horse battery staple"


def wait(pve, node, upid):
    for _ in range(100):
        status = pve.nodes(node).tasks(upid).status.get()
        if status["status"] == "stopped":
            return status["exitstatus"]
        time.sleep(0.05)
    raise AssertionError("task %s never finished" % upid)


def check_snapshots(pve, node, vmid):
    """The snapshot tree of a stopped guest, as proxmoxer drives it on PVE."""
    vm = pve.nodes(node).qemu(vmid)
    before = [s for s in vm.snapshot.get() if s["name"] == "current"]
    assert len(before) == 1 and "parent" not in before[0], before
    upid = vm.snapshot.post(snapname="first", description="before the change", vmstate=1)
    assert upid.startswith("UPID:%s:" % node) and ":qmsnapshot:" in upid, upid
    assert wait(pve, node, upid) == "OK"
    listed = {s["name"]: s for s in vm.snapshot.get()}
    assert set(listed) == {"first", "current"}, listed
    assert listed["current"]["parent"] == "first", listed
    # A stopped guest has no RAM to save: vmstate=1 is ignored, as PVE does.
    assert listed["first"]["vmstate"] == 0 and listed["first"]["snaptime"] > 1700000000, listed
    assert listed["first"]["description"] == "before the change", listed
    config = vm.snapshot("first").config.get()
    cores = int(vm.config.get()["cores"])
    assert int(config["cores"]) == cores and config["snaptime"] == listed["first"]["snaptime"], config
    # PVE refuses in the task, not in the HTTP answer: the exit status says why.
    assert wait(pve, node, vm.snapshot.post(snapname="first")) == \
        "snapshot name 'first' already used"
    for bad in ("1st", "a", "has.dot", "x" * 41):
        try:
            vm.snapshot.post(snapname=bad)
            raise AssertionError("snapname %r was accepted" % bad)
        except ResourceException as e:
            # proxmoxer 1.2 reads "errors" from inside "data", where PVE never puts it: the
            # status line is what it shows.
            assert e.status_code == 400 and "verification failed" in str(e), (bad, str(e))
    try:
        vm.snapshot.post(snapname="current")
        raise AssertionError("the reserved name 'current' was accepted")
    except ResourceException as e:
        assert e.status_code == 500 and "reserved name" in str(e), str(e)
    assert wait(pve, node, vm.snapshot.post(snapname="second")) == "OK"
    second = {s["name"]: s for s in vm.snapshot.get()}["second"]
    assert second["parent"] == "first", second
    vm.config.put(cores=cores + 2)
    upid = vm.snapshot("first").rollback.post()
    assert ":qmrollback:" in upid, upid
    assert wait(pve, node, upid) == "OK"
    assert int(vm.config.get()["cores"]) == cores, "the rollback left the changed configuration"
    assert {s["name"]: s for s in vm.snapshot.get()}["current"]["parent"] == "first"
    upid = vm.snapshot("first").delete()
    assert ":qmdelsnapshot:" in upid, upid
    assert wait(pve, node, upid) == "OK"
    listed = {s["name"]: s for s in vm.snapshot.get()}
    assert set(listed) == {"second", "current"} and "parent" not in listed["second"], listed
    assert wait(pve, node, vm.snapshot("first").delete()) == "snapshot 'first' does not exist"
    assert wait(pve, node, vm.snapshot("first").rollback.post()) == \
        "snapshot 'first' does not exist"
    try:
        vm.snapshot("first").config.get()
        raise AssertionError("the config of a deleted snapshot answered")
    except ResourceException as e:
        assert e.status_code == 500 and "does not exist" in str(e), str(e)
    assert wait(pve, node, pve.nodes(node).qemu(9000).snapshot.post(snapname="tpl")) == \
        "you can't take a snapshot if it's a template"
    # "second" stays: destroying the guest removes it with the guest.


def main():
    with tempfile.TemporaryDirectory() as directory:
        fake = subprocess.Popen(["/usr/bin/python3", os.path.join(HERE, "fake_pve.py"),
                                 "--port", "0", "--dir", directory], stdout=subprocess.PIPE,
                                text=True)
        try:
            ready, port, ca = fake.stdout.readline().split()
            assert ready == "READY"
            pve = ProxmoxAPI("127.0.0.1", port=int(port), user="banlieue@pve",
                             token_name="provider", token_value=SECRET, verify_ssl=ca)
            assert pve.version.get()["version"].startswith("8."), "version envelope"
            nodes = {n["node"]: n["status"] for n in pve.nodes.get()}
            assert nodes["pve1"] == "online" and nodes["pve3"] == "offline", nodes
            assert "local-lvm" in [s["storage"] for s in pve.nodes("pve1").storage.get()]
            newid = int(pve.cluster.nextid.get())
            upid = pve.nodes("pve1").qemu(9000).clone.post(newid=newid, name="x", full=1)
            assert upid.startswith("UPID:pve1:"), upid
            try:  # the template's clone lock, as PVE reports it
                pve.nodes("pve1").qemu(9000).clone.post(newid=newid + 1)
                raise AssertionError("a second clone during the first did not collide")
            except ResourceException as e:
                assert e.status_code == 500 and "got timeout" in str(e), str(e)
            assert wait(pve, "pve1", upid) == "OK"
            pve.nodes("pve1").qemu(newid).config.put(cores=4, memory=4096)
            config = pve.nodes("pve1").qemu(newid).config.get()
            assert int(config["cores"]) == 4 and int(config["memory"]) == 4096, config
            assert wait(pve, "pve1", pve.nodes("pve1").qemu(newid).status.start.post()) == "OK"
            try:
                pve.nodes("pve1").qemu(newid).delete()
                raise AssertionError("a running guest was destroyed")
            except ResourceException as e:
                assert "is running" in str(e), str(e)
            assert wait(pve, "pve1", pve.nodes("pve1").qemu(newid).status.stop.post()) == "OK"
            check_snapshots(pve, "pve1", newid)
            assert wait(pve, "pve1", pve.nodes("pve1").qemu(newid).delete(purge=1)) == "OK"
            assert newid not in [v["vmid"] for v in pve.cluster.resources.get(type="vm")]
            try:
                pve.nodes("pve3").qemu.get()
                raise AssertionError("an offline node answered")
            except ResourceException as e:
                assert e.status_code == 595, e.status_code
            wrong = ProxmoxAPI("127.0.0.1", port=int(port), user="banlieue@pve",
                               token_name="provider", token_value="wrong", verify_ssl=ca)
            try:
                wrong.nodes.get()
                raise AssertionError("a wrong token was accepted")
            except ResourceException as e:
                assert e.status_code == 401, e.status_code
            # Ticket auth as proxmoxer does it against PVE: /access/ticket, then the cookie on
            # every request and the CSRF header on writes.
            ticketed = ProxmoxAPI("127.0.0.1", port=int(port), user="banlieue@pve",
                                  password=PASSWORD, verify_ssl=ca)
            assert "pve1" in [n["node"] for n in ticketed.nodes.get()]
            newid = int(ticketed.cluster.nextid.get())
            upid = ticketed.nodes("pve1").qemu(9000).clone.post(newid=newid, name="t", full=1)
            assert wait(ticketed, "pve1", upid) == "OK"
            assert wait(ticketed, "pve1", ticketed.nodes("pve1").qemu(newid).delete()) == "OK"
            try:
                ProxmoxAPI("127.0.0.1", port=int(port), user="banlieue@pve", password="wrong",
                           verify_ssl=ca).nodes.get()
                raise AssertionError("a wrong password was accepted")
            except AuthenticationError:
                pass  # proxmoxer's answer to a 401 from /access/ticket
        finally:
            fake.terminate()
            fake.wait()
    print("proxmoxer cross-check: the fake PVE API answered like PVE")
    return 0


if __name__ == "__main__":
    sys.exit(main())
