#!/usr/bin/env bash
# The quickstart: banlieue on a local Kubernetes control plane, with one example VM Ready.
#
#   scripts/dev.sh [up] [--real]   install, build, start, bootstrap, create the walkthrough VM
#   scripts/dev.sh status          what runs, and the objects the quickstart created
#   scripts/dev.sh down            stop everything `up` started and forget the cluster's state
#
# `up` installs the Debian packages (scripts/setup.sh), builds the cluster's binaries once
# (deploy/local/build, cached) and banlieue with its plugins, starts the control plane and a
# real node (deploy/local/up --node: containerd, kubelet, kube-proxy) with the image
# localhost/banlieue:<version> built from this build (deploy/local/images), runs
# `banlieue bootstrap operator`, creates two libvirt Providers, a VMClass and a VMImage, applies
# the walkthrough VirtualMachine (examples/01-walkthrough.yaml, unchanged) and waits until it
# is Ready. Every role runs in a container of that image, as on any cluster.
# The Providers' libvirt is the test driver on the simulated host the image ships (nothing
# boots; state lives in the provider pods); with --real they use a real libvirtd that dev.sh
# starts, reached from the provider pods over TLS at the node's host-side address as a libvirt
# host is on a real site (qemu+tls://, certificates under the state directory, the client's in
# a credentials Secret), and the VM runs under QEMU. --real also starts the project's vCenter
# simulator (vcsim, tests/vsphere/vcsim) the same way, outside the pods at the node's host-side
# address with TLS and a login, and adds the vSphere Provider vsphere-vc1 (env: lab) on it.
# Re-running `up` is safe and fast: every step skips what is already there.
#
# Needs root (the node's network namespace, containerd and the kubelet; setup uses apt).
# Environment: BANLIEUE_LOCAL_STATE (state directory, default /tmp/banlieue-local-<uid>),
# JOBS (build parallelism, default nproc), BANLIEUE_BUILD_DIR (a build directory whose
# binaries to use as they are: no configure and no build; default build/dev, built by `up`).
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
usage() { sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; }

command=up
real=0
while [ $# -gt 0 ]; do
  case "$1" in
    up | down | status) command=$1 ;;
    --real) real=1 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "dev.sh: unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then exec sudo --preserve-env=BANLIEUE_LOCAL_STATE,JOBS "$0" "$@"; fi
  echo "dev.sh: needs root (the node's containerd and kubelet; setup installs packages)" >&2
  exit 1
fi

preset=dev
build=${BANLIEUE_BUILD_DIR:-$repo/build/$preset}
prebuilt=0
[ -z "${BANLIEUE_BUILD_DIR:-}" ] || prebuilt=1
banlieue=$build/host/banlieue
plugins=$build/plugins-dir
STATE=${BANLIEUE_LOCAL_STATE:-/tmp/banlieue-local-$(id -u)}
# deploy/local/lib.sh: start and pid_of, for vcsim (a process of this cluster, like the
# apiserver: pid file and log under $STATE/run and $STATE/logs).
# shellcheck source=../deploy/local/lib.sh
. "$repo/deploy/local/lib.sh"
export KUBECONFIG=$STATE/kubeconfig
dev_dir=$STATE/dev  # what dev.sh itself keeps: the libvirt node files, a real libvirtd's state
kubectl=/usr/lib/google-cloud-sdk/bin/kubectl.1.32
[ -x "$kubectl" ] || kubectl=kubectl
k() { "$kubectl" "$@"; }

started=$SECONDS
step() { printf '\n[dev %4ss] %s\n' "$((SECONDS - started))" "$*"; }
fail() {
  echo "dev.sh: $*" >&2
  echo "  control plane logs: $STATE/logs/   pods: kubectl logs -n <namespace> <pod>" >&2
  exit 1
}

# --- a real libvirtd, only with --real ------------------------------------------------------
# dev.sh itself talks to it on its unix socket; the provider pods over TLS on the host side of
# the node's veth pair (HOST_IP in the cluster's run/node.env), the one host address they reach.
libvirt_socket=$dev_dir/libvirt/sock/libvirt-sock
libvirt_uri="qemu:///system?socket=$libvirt_socket"
libvirt_pki=$dev_dir/libvirt/pki
libvirt_tls_secret=libvirt-dev-tls  # the Providers' credentials: client certificate, key, CA
libvirt_client_dn="O=banlieue,CN=banlieue-dev-provider"
virsh_() { virsh -q -c "$libvirt_uri" "$@"; }

node_host_ip() {
  sed -n 's/^HOST_IP=//p' "$STATE/run/node.env" 2>/dev/null | grep . ||
    fail "--real: the cluster has no node address ($STATE/run/node.env)"
}
libvirt_tls_uri() { echo "qemu+tls://$(node_host_ip)/system"; }

libvirtd_pid() {
  local pid
  pid=$(cat "$dev_dir/libvirt/libvirtd.pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

# A libvirtd in dev.sh's mount namespace that dev.sh did not start: it would own the same QEMU
# driver state. (The tests' private libvirtds run in mount namespaces of their own.)
foreign_libvirtd() {
  local pid own_ns
  own_ns=$(readlink /proc/self/ns/mnt)
  for pid in $(pgrep -x libvirtd); do
    if [ "$(readlink "/proc/$pid/ns/mnt" 2>/dev/null)" = "$own_ns" ]; then
      echo "$pid"
      return 0
    fi
  done
  return 1
}

# pki_names_address <dir> <ip>: true when <dir>/servercert.pem already names address <ip>;
# otherwise <dir> is emptied (mode 0700) for a new set of certificates.
pki_names_address() {
  if openssl x509 -in "$1/servercert.pem" -noout -ext subjectAltName 2>/dev/null |
    grep -qx " *IP Address:$2"; then
    return 0
  fi
  rm -rf "$1"
  mkdir -m 0700 "$1"
  return 1
}

# The daemon's certificates for node address <ip>: a CA, a server certificate naming <ip> (the
# provider pods verify it) and the one client certificate the daemon accepts
# (tls_allowed_dn_list), which the Providers' credentials Secret carries.
make_libvirt_pki() {  # make_libvirt_pki <ip>
  local ip=$1
  pki_names_address "$libvirt_pki" "$ip" && return 0
  (
    cd "$libvirt_pki"
    printf '%s\n' "basicConstraints=critical,CA:FALSE" \
      "keyUsage=critical,digitalSignature,keyEncipherment" >leaf.ext
    { cat leaf.ext; printf '%s\n' "extendedKeyUsage=serverAuth" "subjectAltName=IP:$ip"; } >server.ext
    { cat leaf.ext; echo "extendedKeyUsage=clientAuth"; } >client.ext
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out cacert.pem -days 30 \
      -subj /CN=banlieue-dev-libvirt-ca -addext basicConstraints=critical,CA:TRUE \
      -addext keyUsage=critical,keyCertSign,cRLSign
    # issue <name> <subject> <extensions>: <name>key.pem and <name>cert.pem, signed by the CA
    issue() {
      openssl req -newkey rsa:2048 -nodes -keyout "$1key.pem" -out "$1.csr" -subj "$2"
      openssl x509 -req -in "$1.csr" -CA cacert.pem -CAkey ca.key -CAcreateserial -days 30 \
        -out "$1cert.pem" -extfile "$3"
    }
    issue server "/O=banlieue/CN=$ip" server.ext
    issue client "/${libvirt_client_dn//,//}" client.ext
  ) >"$dev_dir/libvirt/pki.log" 2>&1 ||
    fail "--real: making libvirtd's certificates failed: see $dev_dir/libvirt/pki.log"
}

# libvirtd owns QEMU's machine-wide state (/run/libvirt): dev.sh starts its own only when no
# other runs beside it, with its socket in the state directory and a TLS listener on the node's
# host-side address, and defines a transient pool and an isolated network (a bridge without
# addresses: no dnsmasq, no firewall rules).
start_real_libvirt() {
  local d=$dev_dir/libvirt ip other
  ip=$(node_host_ip)
  if ! libvirtd_pid >/dev/null; then
    if other=$(foreign_libvirtd); then
      fail "--real: a libvirtd dev.sh did not start is running (pid $other); stop it first (it owns the QEMU driver)"
    fi
    mkdir -p "$d/sock" "$d/pool"
    # QEMU runs as libvirt-qemu and must reach the image through these directories.
    chmod 0711 "$STATE" "$dev_dir" "$d" "$d/pool"
    make_libvirt_pki "$ip"
    cat >"$d/libvirtd.conf" <<CONF
listen_tcp = 0
listen_tls = 1
listen_addr = "$ip"
key_file = "$libvirt_pki/serverkey.pem"
cert_file = "$libvirt_pki/servercert.pem"
ca_file = "$libvirt_pki/cacert.pem"
auth_tls = "none"
tls_no_verify_certificate = 0
tls_allowed_dn_list = ["$libvirt_client_dn"]
unix_sock_dir = "$d/sock"
log_outputs = "3:file:$d/libvirtd.log"
CONF
    [ -S /run/libvirt/virtlogd-sock ] || /usr/sbin/virtlogd -d -p "$d/virtlogd.pid"
    # --listen: the TLS listener (libvirtd opens no TCP socket without it).
    /usr/sbin/libvirtd -d --listen -f "$d/libvirtd.conf" -p "$d/libvirtd.pid" ||
      fail "libvirtd did not start: see $d/libvirtd.log"
    for _ in $(seq 1 60); do [ -S "$libvirt_socket" ] && break; sleep 0.5; done
    [ -S "$libvirt_socket" ] || fail "libvirtd did not open $libvirt_socket: see $d/libvirtd.log"
  fi
  # Connect as a provider pod will: TLS to the node's host-side address, both sides verified.
  virsh -q -c "$(libvirt_tls_uri)?pkipath=$libvirt_pki" uri >/dev/null ||
    fail "--real: libvirtd does not answer at $(libvirt_tls_uri): see $d/libvirtd.log"
  k create secret generic "$libvirt_tls_secret" --type=kubernetes.io/tls \
    --from-file=tls.crt="$libvirt_pki/clientcert.pem" \
    --from-file=tls.key="$libvirt_pki/clientkey.pem" \
    --from-file=ca.crt="$libvirt_pki/cacert.pem" --dry-run=client -o yaml | k apply -f - >/dev/null
  virsh_ pool-info banlieue-dev >/dev/null 2>&1 ||
    virsh_ pool-create-as banlieue-dev dir --target "$d/pool" >/dev/null
  virsh_ net-info banlieue-dev >/dev/null 2>&1 ||
    virsh_ net-create <(echo "<network><name>banlieue-dev</name><bridge name='bnldev0'/></network>") >/dev/null
  # A blank disk stands in for the image: the VM boots to its firmware, which is enough to
  # show the lifecycle. A real OS comes from a VMImage with a Url source (docs/adr/0013).
  if [ ! -f "$d/pool/ubuntu-22.04.qcow2" ]; then
    qemu-img create -q -f qcow2 "$d/pool/ubuntu-22.04.qcow2" 1G
    chmod 0644 "$d/pool/ubuntu-22.04.qcow2"
    virsh_ pool-refresh banlieue-dev >/dev/null
  fi
}

stop_real_libvirt() {
  local pid
  pid=$(libvirtd_pid) || return 0
  # Domains the provider pods created: the pods are gone by now, so nothing else removes them.
  for domain in $(virsh_ list --all --name 2>/dev/null); do
    virsh_ destroy "$domain" >/dev/null 2>&1 || true
    virsh_ undefine --nvram "$domain" >/dev/null 2>&1 || virsh_ undefine "$domain" >/dev/null 2>&1 || true
  done
  virsh_ net-destroy banlieue-dev >/dev/null 2>&1 || true
  # libvirt 9.0 leaves the transient network's empty port directory behind.
  rm -rf /run/libvirt/network/banlieue-dev
  virsh_ pool-destroy banlieue-dev >/dev/null 2>&1 || true
  kill -TERM "$pid"
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if pid=$(cat "$dev_dir/libvirt/virtlogd.pid" 2>/dev/null); then kill -TERM "$pid" 2>/dev/null || true; fi
  echo "stopped the libvirtd dev.sh started"
}

# --- vcsim (the project's vCenter simulator), only with --real --------------------------------
# Like libvirtd it runs outside the node, so its inventory outlives every provider pod, and the
# provider pods reach it at the node's host-side address over TLS (the vSphere plugin refuses
# http://) with a required login. Its CA, server certificate and password are under
# $dev_dir/vcsim; the vSphere Provider's Secret carries the login and the CA (ca.crt). The
# simulator picks a free port; $dev_dir/vcsim/url keeps the URL it printed. Its inventory (the
# simulator's own DC0_* VMs, the Provider's clones) is in its memory: it starts empty of clones.
vcsim_dir=$dev_dir/vcsim
vcsim_bin=$build/tests/vsphere/vcsim
vcsim_secret=vcsim-dev-credentials
vcsim_user=banlieue@vsphere.local

# The server certificate for node address <ip>, signed by a CA of its own.
make_vcsim_pki() {  # make_vcsim_pki <ip>
  local ip=$1 pki=$vcsim_dir/pki
  pki_names_address "$pki" "$ip" && return 0
  (
    cd "$pki"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key \
      -out cacert.pem -days 30 -subj /CN=banlieue-dev-vcsim-ca \
      -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout serverkey.pem \
      -out server.csr -subj "/O=banlieue/CN=$ip"
    printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature" \
      "extendedKeyUsage=serverAuth" "subjectAltName=IP:$ip" >server.ext
    openssl x509 -req -in server.csr -CA cacert.pem -CAkey ca.key -CAcreateserial -days 30 \
      -out servercert.pem -extfile server.ext
  ) >"$vcsim_dir/pki.log" 2>&1 || fail "--real: making vcsim's certificates failed: see $vcsim_dir/pki.log"
}

vcsim_url() { cat "$vcsim_dir/url" 2>/dev/null; }

# vcsim_inventory: the simulator's VMs, one JSON object a line, through its own -inventory client.
vcsim_inventory() {
  "$vcsim_bin" -inventory "$(vcsim_url)" -cacert "$vcsim_dir/pki/cacert.pem" \
    -username "$vcsim_user" -password "$(cat "$vcsim_dir/password")"
}

start_vcsim() {
  local ip url
  ip=$(node_host_ip)
  [ -x "$vcsim_bin" ] || fail "--real: no vcsim at $vcsim_bin (build target banlieue_vcsim)"
  mkdir -p "$vcsim_dir"
  # A simulator of an earlier node address: its certificate names the old one.
  url=$(vcsim_url || true)
  if pid_of vcsim >/dev/null && [[ $url != https://$ip:* ]]; then stop_vcsim >/dev/null; fi
  make_vcsim_pki "$ip"
  if ! pid_of vcsim >/dev/null; then
    [ -s "$vcsim_dir/password" ] || (umask 077 && openssl rand -hex 16 >"$vcsim_dir/password")
    rm -f "$vcsim_dir/url"
    start vcsim "$vcsim_bin" -l "$ip:0" -tlscert "$vcsim_dir/pki/servercert.pem" \
      -tlskey "$vcsim_dir/pki/serverkey.pem" -username "$vcsim_user" \
      -password "$(cat "$vcsim_dir/password")"
    # It prints "url=<sdk url> pid=<pid>" once it accepts connections.
    for _ in $(seq 1 60); do
      url=$(sed -n 's/^url=\(https:[^ ]*\) .*/\1/p' "$STATE/logs/vcsim.log" 2>/dev/null | head -n 1)
      [ -z "$url" ] || break
      pid_of vcsim >/dev/null || break
      sleep 0.5
    done
    [ -n "$url" ] || fail "--real: vcsim did not start: see $STATE/logs/vcsim.log"
    echo "$url" >"$vcsim_dir/url"
  fi
  # Log in and list as the provider pods will: TLS to the node's host-side address, verified.
  vcsim_inventory >/dev/null || fail "--real: vcsim does not answer at $(vcsim_url): see $STATE/logs/vcsim.log"
  k create secret generic "$vcsim_secret" --from-literal=username="$vcsim_user" \
    --from-file=password=<(tr -d '\n' <"$vcsim_dir/password") \
    --from-file=ca.crt="$vcsim_dir/pki/cacert.pem" --dry-run=client -o yaml | k apply -f - >/dev/null
}

stop_vcsim() {
  local pid
  pid=$(pid_of vcsim) || return 0
  # SIGTERM: the simulator removes its temporary datastore directories.
  kill -TERM "$pid"
  for _ in $(seq 1 100); do pid_of vcsim >/dev/null || break; sleep 0.1; done
  if pid_of vcsim >/dev/null; then kill -KILL "$pid"; fi
  rm -f "$STATE/run/vcsim.pid" "$vcsim_dir/url"
  echo "stopped the vcsim dev.sh started"
}

# --- the objects a platform team would write -----------------------------------------------
provider() {  # provider <name> <labels> <endpoint> <pool> <network>
  local annotations="{}" allow_test_driver=true credentials=()
  # QEMU without KVM (TCG): slower, but it runs everywhere, including nested virtualisation
  # where KVM refuses the guest's CPU model. Only the simulated hosts allow the test driver.
  # The real libvirtd is reached over TLS with the client certificate, key and CA of a Secret.
  if [ "$real" -eq 1 ]; then
    annotations="{ libvirt.banlieue.io/domain-type: qemu }" allow_test_driver=false
    credentials=(-e "/allowTestDriver:/a\\    credentialsRef: { name: $libvirt_tls_secret }")
  fi
  sed -e "s|@NAME@|$1|; s|@LABELS@|$2|; s|@ANNOTATIONS@|$annotations|; s|@ENDPOINT@|$3|" \
    -e "s|@ALLOW_TEST_DRIVER@|$allow_test_driver|" \
    -e "s|@POOL@|$4|; s|@NETWORK@|$5|" "${credentials[@]}" deploy/dev/provider.yaml.in
}

apply_platform() {
  local endpoint1 endpoint2 pool network image
  if [ "$real" -eq 1 ]; then
    endpoint1=$(libvirt_tls_uri) endpoint2=$endpoint1 pool=banlieue-dev network=banlieue-dev
    image=$dev_dir/libvirt/pool/ubuntu-22.04.qcow2
  else
    # The simulated host the image ships (deploy/dev/libvirt-test-node.xml): each provider
    # pod's test driver holds a host of its own, in its memory.
    endpoint1=test:///usr/share/banlieue/dev/libvirt-test-node.xml endpoint2=$endpoint1
    pool=default network=default image=/var/lib/libvirt/images/ubuntu-22.04.qcow2
  fi
  {
    provider libvirt-host1 "{ dc: dc1, env: prod }" "$endpoint1" "$pool" "$network"
    echo "---"
    provider libvirt-host2 "{ dc: dc1, env: staging }" "$endpoint2" "$pool" "$network"
    echo "---"
    sed -e "s|@IMAGE_PATH@|$image|" deploy/dev/class-and-image.yaml.in
    if [ "$real" -eq 1 ]; then
      echo "---"
      sed -e "s|@ENDPOINT@|$(vcsim_url)|; s|@SECRET@|$vcsim_secret|" deploy/dev/vsphere-provider.yaml.in
    fi
  } | k apply -f - | sed 's/^/  /'
}

wait_for() {  # wait_for <what> <seconds> <kubectl wait args...>
  local what=$1 timeout=$2
  shift 2
  if ! k wait --for=condition=Ready --timeout="${timeout}s" "$@" >/dev/null; then
    k describe "$@" | sed -n '/^Status:/,$p' | sed 's/^/  /' >&2
    fail "$what did not become Ready within ${timeout}s"
  fi
}

up() {
  step "install dependencies (scripts/setup.sh)"
  scripts/setup.sh

  step "control plane binaries (deploy/local/build; built once, then cached)"
  deploy/local/build

  if [ "$prebuilt" -eq 1 ]; then
    step "banlieue and its plugins: the binaries of $build as they are (BANLIEUE_BUILD_DIR)"
    [ -x "$banlieue" ] || fail "no $banlieue: build $build first"
  else
    step "build banlieue and its plugins ($build)"
    local extra=()
    [ "$real" -eq 0 ] || extra=(banlieue_vcsim)  # --real's vCenter simulator
    cmake --preset "$preset" >/dev/null
    cmake --build --preset "$preset" -j "${JOBS:-$(nproc)}" --target banlieue \
      banlieue-provider-libvirt banlieue-provider-vsphere banlieue-provider-proxmox \
      banlieue-provider-file "${extra[@]}"
  fi

  step "local control plane and node, with the image of this build (deploy/local/up --node)"
  deploy/local/up --state-dir "$STATE" --node --image-build-dir "$build"

  step "banlieue bootstrap operator (CRDs, RBAC, controller, operator, one ProviderClass per plugin)"
  # The plugins of this build describe the ProviderClasses; the pods load the image's copies.
  "$banlieue" --log-level warn bootstrap operator --plugin-dir "$plugins"
  k -n banlieue-system rollout status deploy/banlieue-controller deploy/banlieue-operator --timeout=120s |
    sed 's/^/  /'

  if [ "$real" -eq 1 ]; then
    step "a real libvirtd (TLS at the node's host-side address; socket, certificates, pool and network under $dev_dir/libvirt)"
    start_real_libvirt
    step "vcsim, a vCenter simulator (TLS at the node's host-side address; certificates under $vcsim_dir)"
    start_vcsim
    echo "  $(vcsim_url)"
  fi

  step "Providers, VMClass and VMImage (what a platform team writes)"
  apply_platform
  echo "  the operator gives each Provider its own pod; waiting for them to report Ready"
  wait_for "Provider libvirt-host1" 120 provider/libvirt-host1
  wait_for "Provider libvirt-host2" 120 provider/libvirt-host2
  [ "$real" -eq 0 ] || wait_for "Provider vsphere-vc1" 120 provider/vsphere-vc1
  wait_for "VMImage ubuntu-22-04" 60 vmimage/ubuntu-22-04

  step "the walkthrough VirtualMachine (examples/01-walkthrough.yaml, what a consumer writes)"
  # Created once: a re-run must not undo what the user did to it since (a swap, a power-off).
  if k get bvm db-prod-01 >/dev/null 2>&1; then
    echo "  db-prod-01 exists; left as it is (kubectl delete bvm db-prod-01 to start it afresh)"
  else
    k create -f examples/01-walkthrough.yaml | sed 's/^/  /'
  fi
  wait_for "VirtualMachine db-prod-01" 180 bvm/db-prod-01
  k get bvm | sed 's/^/  /'

  step "ready in ${SECONDS}s"
  cat <<EOF
  export KUBECONFIG=$KUBECONFIG
  kubectl get bvm -w                  # watch status (another terminal)
  kubectl get providers,libvirtmachines,vmimages
  # swap backends: only the placement changes; the VM moves to libvirt-host2
  kubectl patch bvm db-prod-01 --type merge -p '{"spec":{"placement":{"providerSelector":{"matchLabels":{"env":"staging"}}}}}'
  kubectl patch bvm db-prod-01 --type merge -p '{"spec":{"desiredPowerState":"PoweredOff"}}'
EOF
  [ "$real" -eq 0 ] || cat <<EOF
  # with --real, across hypervisors: to the vSphere Provider vsphere-vc1 on vcsim
  kubectl patch bvm db-prod-01 --type merge -p '{"spec":{"placement":{"providerSelector":{"matchLabels":{"env":"lab"}}}}}'
EOF
  cat <<EOF
  kubectl delete bvm db-prod-01       # the backend VM goes first, then the object
  kubectl logs -n banlieue-system deploy/banlieue-controller
  kubectl logs deploy/banlieue-provider-libvirt-libvirt-host1   # a Provider's own pod
  kubectl get pods -A -o wide         # every role in a container on node banlieue-node
  more examples: examples/*.yaml
  stop everything: scripts/dev.sh down
EOF
}

status() {
  deploy/local/status --state-dir "$STATE" || true
  if libvirtd_pid >/dev/null; then
    echo "libvirtd (dev.sh's)        running (pid $(libvirtd_pid)), $(libvirt_tls_uri)"
  fi
  if pid_of vcsim >/dev/null; then
    echo "vcsim (dev.sh's)           running (pid $(pid_of vcsim)), $(vcsim_url)"
  fi
  if [ -f "$KUBECONFIG" ] && k get --request-timeout=5s providers,vm -A 2>/dev/null; then :; fi
}

down() {
  # The node and its containers stop first; the control plane's state goes with it, so the
  # next `up` starts clean (a test-driver host would not survive a restart anyway).
  deploy/local/down --state-dir "$STATE"
  stop_real_libvirt  # after the pods (nothing recreates its domains), before its pid file goes
  stop_vcsim         # likewise; its pid file is under $STATE/run
  deploy/local/down --state-dir "$STATE" --purge >/dev/null
}

"$command"
